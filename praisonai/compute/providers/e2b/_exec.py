"""One command on E2B: ``commands.run`` in the background, waited with the SDK's own timeout.

The traps this handles (cloud-sdks.md §1.4): a non-zero exit raises ``CommandExitException``
(its ``exit_code`` is the result, not an error); at the timeout ``wait()`` raises
``TimeoutException`` with no exit code while the process keeps running, so it is killed here by
pid, and its whole tree by the process group the wrapper script opened; output arrives as UTF-8
text (``errors="replace"``), so it is re-encoded for the byte buffers and is not binary-safe.
"""

from __future__ import annotations

import contextlib
import re
import shlex
import uuid
from collections.abc import Iterable
from typing import Any

import anyio

from praisonai import _limits
from praisonai._errors import PathNotFoundError
from praisonai._output import OutputBuffer, exec_result
from praisonai._types import ExecRequest, ExecResult, stdin_chunks
from praisonai.compute.providers.e2b._errors import translated

#: The exit status the wrapper gives when the working directory is missing, with this on stderr.
NO_CWD_EXIT = 200
NO_CWD_MARK = "praisonai-e2b: no working directory"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def wrapper(command: str, cwd: str, group_file: str, env_file: str = "", names: Iterable[str] = ()) -> str:
    """The line E2B's ``/bin/bash -l -c`` runs: enter ``cwd`` (or say it is missing), load the
    env bound by ``bind_env`` from ``env_file`` when it exists (the call's own env, ``names``,
    still wins, as on the helper), open a new session whose id is written to ``group_file`` (so a
    timeout kills the whole tree whatever envd's kill reaches), and run ``command`` with
    ``sh -c`` as every provider does. Values never appear here: they come from the env."""
    group = shlex.quote(group_file)
    inner = f'echo $$ > {group}; exec /bin/sh -c -- "$0"'
    bound = bound_env(env_file, names)
    return (
        f"cd -- {shlex.quote(cwd)} 2>/dev/null || {{ echo {shlex.quote(NO_CWD_MARK)} >&2; "
        f"exit {NO_CWD_EXIT}; }}; {bound}setsid -w /bin/sh -c {shlex.quote(inner)} {shlex.quote(command)}; "
        f"s=$?; rm -f {group}; exit $s"
    )


def bound_env(env_file: str, names: Iterable[str]) -> str:
    """Shell code (``;``-terminated, empty without ``env_file``) exporting the env bound by
    ``bind_env`` from ``env_file`` when it exists, the variables ``names`` keeping the values they
    had (a call's own env wins over the bound one)."""
    if not env_file:
        return ""
    kept = [name for name in names if _NAME.fullmatch(name)]
    save = "".join(f'__praisonai_{i}="${name}"; ' for i, name in enumerate(kept))
    restore = "".join(f'export {name}="$__praisonai_{i}"; ' for i, name in enumerate(kept))
    source = shlex.quote(env_file)
    return f"if [ -r {source} ]; then {save}set -a; . {source}; set +a; {restore}fi; "


async def run(
    sandbox: Any, instance_id: str, request: ExecRequest, cwd: str, env_file: str = ""
) -> ExecResult:
    """Run ``request`` in ``sandbox`` (an ``e2b.AsyncSandbox``) with the contract's semantics;
    ``env_file``: the bound env to load first (see :func:`wrapper`)."""
    import e2b

    out, err = OutputBuffer(request.max_output), OutputBuffer(request.max_output)

    def sink(name: str, buffer: OutputBuffer) -> Any:
        def take(text: str) -> None:
            chunk = text.encode()
            buffer.write(chunk)
            if request.on_output is not None:
                request.on_output(name, chunk)  # type: ignore[arg-type]

        return take

    group_file = f"/tmp/.praisonai-{uuid.uuid4().hex}.sid"
    timed_out, code = False, None
    with translated("exec", instance_id):
        handle = await sandbox.commands.run(
            wrapper(request.command, cwd, group_file, env_file, request.env),
            background=True,
            envs=dict(request.env),
            timeout=request.timeout or 0,  # 0: no limit (the SDK's default would be 60 s)
            stdin=request.stdin is not None,
            on_stdout=sink("stdout", out),
            on_stderr=sink("stderr", err),
            retain_output=False,  # the buffers keep head and tail; the SDK would keep it all
        )
        try:
            if request.stdin is not None:
                async for chunk in stdin_chunks(request.stdin):
                    await handle.send_stdin(chunk)
                await handle.close_stdin()
            result = await handle.wait()
            code = result.exit_code
        except e2b.CommandExitException as exc:  # a non-zero exit: a result, not an error
            code = exc.exit_code
        except e2b.TimeoutException:
            timed_out = True
            await _kill(sandbox, handle.pid, group_file)
    if code == NO_CWD_EXIT and NO_CWD_MARK in err.text():
        raise PathNotFoundError(f"working directory {request.cwd} does not exist", op="exec")
    return exec_result(code if code is None or code >= 0 else 128 + 9, out, err, timed_out=timed_out)


async def _kill(sandbox: Any, pid: int, group_file: str) -> None:
    """Kill a timed-out command: its session (every process it started) and then its pid."""
    import e2b

    group = shlex.quote(group_file)
    script = f'kill -KILL -- -"$(cat {group})" 2>/dev/null; rm -f {group}'
    with anyio.move_on_after(_limits.KILL_GRACE_S), contextlib.suppress(e2b.SandboxException):
        with contextlib.suppress(e2b.CommandExitException):
            await sandbox.commands.run(script, timeout=_limits.KILL_GRACE_S)
        await sandbox.commands.kill(pid)
