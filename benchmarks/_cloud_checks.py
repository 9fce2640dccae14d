"""Behaviour checks bench_cloud.py runs side by side (ours, and the peer's adapters) through a fake.

Each check is exactly what its docstring says, through the side's own public API (see
_cloud_sides.py). A check answers PASS, FAIL (with what was seen), or FAKE GAP when the fake
refused a vendor call it does not model (its errors say "does not model"): that says nothing
about the adapter, so it is not counted as a failure; NOT RUN when the adapter's own dependency
is missing.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
Check = Callable[[Any, str], Awaitable[tuple[bool, str]]]
CHECKS: dict[str, Check] = {}


def check(fn: Check) -> Check:
    CHECKS[fn.__name__] = fn
    return fn


@check
async def exit_code_of_failing_command(side: Any, h: str) -> tuple[bool, str]:
    """``echo out; echo err >&2; exit 3``: the exit code returned is 3."""
    code, _, _ = await side.run(h, "echo out; echo err >&2; exit 3")
    return code == 3, f"exit_code={code}"


@check
async def stderr_kept_apart(side: Any, h: str) -> tuple[bool, str]:
    """The same command: stdout is exactly "out\\n" and stderr exactly "err\\n"."""
    _, out, err = await side.run(h, "echo out; echo err >&2; exit 3")
    return (out, err) == ("out\n", "err\n"), f"stdout={out[:80]!r} stderr={err[:80]!r}"


@check
async def timeout_kills_the_command(side: Any, h: str) -> tuple[bool, str]:
    """``echo before; sleep 20.<n>`` with a 2 s timeout: the call returns within 10 s, and a
    later ``grep -al '[s]leep.20.<n>' /proc/[0-9]*/cmdline`` in the instance finds no survivor
    (``-a``: without it GNU grep reads cmdline as binary, the NUL between argv words ends a line
    and the pattern can never match)."""
    token = f"20.{secrets.randbelow(10**6):06d}"
    started = time.monotonic()
    code, _, _ = await side.run(h, f"echo before; sleep {token}", timeout=2)
    took = time.monotonic() - started
    _, left, _ = await side.run(h, f"grep -al '[s]leep.{token}' /proc/[0-9]*/cmdline 2>/dev/null; true")
    survivors = len(left.split())
    detail = f"returned after {took:.1f}s, exit_code={code}, {survivors} process(es) left running"
    return took < 10 and survivors == 0, detail


@check
async def binary_round_trip(side: Any, h: str) -> tuple[bool, str]:
    """Write all 256 byte values x4 (1 KiB) to a file, read it back: the same bytes."""
    data = bytes(range(256)) * 4
    await side.write(h, "bench-all-bytes.bin", data)
    got = await side.read(h, "bench-all-bytes.bin")
    return got == data, f"read back {len(got)} bytes, {'equal' if got == data else 'different'}"


@check
async def write_file_then_read_back(side: Any, h: str) -> tuple[bool, str]:
    """Write ``hello\\nworld\\n`` (text), read the file back: exactly that text."""
    await side.write(h, "bench-text.txt", b"hello\nworld\n")
    got = await side.read(h, "bench-text.txt")
    return got == b"hello\nworld\n", f"read back {got[:40]!r}"


@check
async def env_not_on_a_command_line(side: Any, h: str) -> tuple[bool, str]:
    """Provision a new instance with env ``BENCH_TOKEN=tok<hex>``; one command prints
    ``$BENCH_TOKEN`` and ``grep -al``s every live process's /proc/<pid>/cmdline for the value (the
    pattern ``[t]ok<hex>`` does not match its own grep). Pass: the value arrived and no command
    line holds it."""
    token = "tok" + secrets.token_hex(8)
    other = await side.provision(env={"BENCH_TOKEN": token})
    try:
        grep = f'grep -al "[t]{token[1:]}" /proc/[0-9]*/cmdline 2>/dev/null; true'
        _, out, _ = await side.run(other, f'printf "%s\\n" "$BENCH_TOKEN"; {grep}')
    finally:
        await side.shutdown(other)
    lines = out.split()
    arrived, exposed = bool(lines) and lines[0] == token, lines[1:]
    return arrived and not exposed, f"value arrived: {arrived}; command lines holding it: {exposed}"


@check
async def list_from_another_process(side: Any, h: str) -> tuple[bool, str]:
    """A child Python process builds a fresh adapter (``side.list_expr``) and prints the ids its
    ``list_instances()`` returns: the instance this process made is among them. An adapter with
    no list API fails it."""
    if side.list_expr is None:
        return False, "the adapter has no way to list its instances"
    script = (
        "import anyio\n"
        f"p = {side.list_expr}\n"
        "print('\\n'.join(str(i.instance_id) for i in anyio.run(p.list_instances)))\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                          timeout=180, check=False)  # fmt: skip
    if done.returncode != 0:
        return False, f"the child failed: {done.stderr.strip().splitlines()[-1:]}"
    listed = done.stdout.split()
    return h in listed, f"{h} {'is' if h in listed else 'is not'} among {len(listed)} listed"


async def run_checks(side: Any) -> dict[str, dict[str, Any]]:
    """Every check on one instance of ``side`` (provisioned here, shut down after)."""
    results: dict[str, dict[str, Any]] = {}
    try:
        h = await side.provision()
    except Exception as exc:
        failed = _failed(exc, "provision")
        if isinstance(exc, ImportError) or "install" in str(exc).lower():
            failed["result"] = "NOT RUN"  # the adapter's own dependency is missing
        return {name: failed for name in CHECKS}
    try:
        for name, fn in CHECKS.items():
            try:
                ok, detail = await fn(side, h)
                results[name] = {"result": "PASS" if ok else "FAIL", "detail": detail}
            except Exception as exc:
                results[name] = _failed(exc, name)
    finally:
        await side.shutdown(h)
    return results


def _failed(exc: BaseException, where: str) -> dict[str, Any]:
    text = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
    gap = "does not model" in str(exc)
    return {"result": "FAKE GAP" if gap else "FAIL", "detail": f"{where} raised {text}"}
