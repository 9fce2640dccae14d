"""What several test modules share that is not a fixture: import it as ``from kit import …``
(pytest puts tests/ on the path, as the folder of the root conftest.py; a second conftest.py in a
sub-folder makes ``from conftest import …`` ambiguous, hence this module)."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import select
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from praisonai import _portal
from praisonai._ledger import Ledger, home_tag
from praisonai._locks import try_lock
from praisonai.cli._groups import OWN_FAILURE, RUNNERS
from praisonai.compute.base import ComputeProvider

if TYPE_CHECKING:
    from fakes.e2b import E2BFake

Instance = tuple[ComputeProvider, str]
#: The bytes of a host file no instance may reach (``host_dir`` in tests/faults/conftest.py).
SECRET = b"HOST-SECRET"


#: A command as the model could write it, in Python (every image of ours has it): for argv[1]
#: seconds it writes into every file descriptor it can open under ``/proc/*/fd`` and into every
#: file of a praisonai spool it can reach (``/tmp/.praisonai*``), reads every ``/proc/*/environ``,
#: ``cmdline`` and ``mem`` it can, and SIGKILLs every pid but its own and its parent's; then it
#: writes what could be a secret (32 hex digits) to the file argv[2] and prints "<writes> <found>".
#: Its opens do not block, so a FIFO without a reader cannot stall it.
PROC_ATTACK = r"""
import os, re, signal, sys, time
me, end, forged, loot = os.getpid(), time.time() + float(sys.argv[1]), 0, set()
def keep(data):  # every secret we look for is 32 hex digits: what could be one is kept
    loot.update(re.findall(rb"[0-9a-f]{32}", data))
def grab(path):
    try:
        with open(path, "rb") as f:
            keep(f.read(1 << 20))
    except OSError:
        pass
def memory(pid):
    try:
        with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
            for line in maps:
                span, perms = line.split()[:2]
                lo, hi = (int(x, 16) for x in span.split("-"))
                if "r" in perms:
                    try:
                        mem.seek(lo); keep(mem.read(min(hi - lo, 4 << 20)))
                    except (OSError, ValueError, OverflowError):
                        pass
    except OSError:
        pass
def forge(path):
    global forged
    try:
        f = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return
    try:
        os.write(f, b"FORGED\n D x 0 0 FORGED\n"); forged += 1
    except OSError:
        pass
    os.close(f)
def spools():
    for top in [f"/tmp/{n}" for n in os.listdir("/tmp") if n.startswith(".praisonai")]:
        for folder, _, names in os.walk(top):
            for name in names:
                grab(f"{folder}/{name}"); forge(f"{folder}/{name}")
while time.time() < end:
    spools()
    for pid in [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (me, os.getppid())]:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            fds = []
        for fd in fds:
            forge(f"/proc/{pid}/fd/{fd}")
        for name in ("environ", "cmdline"):
            grab(f"/proc/{pid}/{name}")
        memory(pid)
        try:
            os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass
with open(sys.argv[2], "wb") as out:
    out.write(b"\n".join(loot))
print(forged, len(loot))
"""


def provisioned(provider: ComputeProvider) -> Iterator[Instance]:
    """Yield ``(provider, instance_id)`` of a new instance, removed afterwards whatever happens."""
    info = _portal.call(provider.provision)
    try:
        yield provider, info.instance_id
    finally:
        _portal.call(provider.shutdown, info.instance_id)


def run_ok(instance: Instance, command: str) -> None:
    """Run ``command`` in the instance; it must exit 0 (its stderr says why not)."""
    provider, instance_id = instance
    result = _portal.call(provider.execute, instance_id, command)
    assert result.exit_code == 0, result.stderr


def provider_named(kind: str, request: Any) -> ComputeProvider:
    """A provider for the test parameter ``kind`` ("local", "local-bwrap", "docker" or "ssh"),
    skipping (through the conftest fixtures ``docker_ok``, ``bwrap_ok``, ``sshd``) where the
    service cannot run here. ``request`` is the test's ``pytest.FixtureRequest``."""
    from praisonai.compute.providers.docker import DockerCompute
    from praisonai.compute.providers.local import LocalCompute
    from praisonai.compute.providers.ssh import SSHCompute

    if kind == "docker":
        request.getfixturevalue("docker_ok")
        return DockerCompute()
    if kind == "ssh":
        return SSHCompute(**request.getfixturevalue("sshd").connect_kwargs())
    if kind == "local-bwrap":
        request.getfixturevalue("bwrap_ok")
    return LocalCompute(isolate=kind == "local-bwrap")


def left_behind(home: Path) -> list[str]:
    """What a refused input must not leave: ledger rows, local instances, containers of this home."""
    rows = [e.instance_id for e in Ledger.default().entries()]
    local = sorted(p.name for p in (home / "local").glob("*")) if (home / "local").is_dir() else []
    containers = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=praisonai.home={home_tag()}"],
        capture_output=True, text=True, check=False,
    ).stdout.split()  # fmt: skip
    return rows + local + containers


@dataclass
class Member:
    """The attributes SharedCompute reads and swaps on an agent (praisonai.agents.Agent has them)."""

    name: str
    tools: list[Callable[..., Any]] = field(default_factory=list)
    instructions: str = "You are helpful."
    backend: object = None


def write_wheel(folder: Path, name: str, version: str, code: str) -> None:
    """A minimal pure-Python wheel, written by hand (no network, no build tools)."""
    dist = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": code.encode(),
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(
        f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}\n"
        for path, data in files.items()
    )
    with zipfile.ZipFile(folder / f"{name}-{version}-py3-none-any.whl", "w") as wheel:
        for path, data in files.items():
            wheel.writestr(path, data)
        wheel.writestr(f"{dist}/RECORD", record + f"{dist}/RECORD,,\n")


def race_writers(
    providers: list[ComputeProvider],
    instance_id: str,
    path: str,
    writes: int = 12,
    size: int = 3 * 1024 * 1024,
) -> set[str]:
    """Two writers of different large payloads and a reader, concurrently: what the reader saw."""
    payloads = [bytes([65 + n]) * size for n in range(2)]
    _portal.call(providers[0].write_file, instance_id, path, payloads[0])
    seen: set[bytes] = set()
    done = threading.Event()

    def write(n: int) -> None:
        for _ in range(writes):
            _portal.call(providers[n].write_file, instance_id, path, payloads[n])

    def read() -> None:
        while not done.is_set():
            seen.add(_portal.call(providers[2].read_file, instance_id, path))

    writers = [threading.Thread(target=write, args=(n,)) for n in range(2)]
    reader = threading.Thread(target=read)
    for thread in [reader, *writers]:
        thread.start()
    for thread in writers:
        thread.join()
    done.set()
    reader.join()
    seen.add(_portal.call(providers[2].read_file, instance_id, path))
    return {describe(data, payloads) for data in seen}


def describe(data: bytes, payloads: list[bytes]) -> str:
    """``payload 0``/``payload 1``, or what a mix looks like (first and last byte, length)."""
    if data in payloads:
        return f"payload {payloads.index(data)}"
    return f"mixed {data[:1]!r}..{data[-1:]!r} of {len(data)} bytes"


@contextlib.contextmanager
def environment(values: Mapping[str, str | None]) -> Iterator[None]:
    """``values`` in ``os.environ`` (None: unset) for the block, so that the child processes of
    the cross-process checks see them too; restored afterwards."""
    saved = {key: os.environ.get(key) for key in values}
    set_environment(values)
    try:
        yield
    finally:
        set_environment(saved)


def set_environment(values: Mapping[str, str | None]) -> None:
    for key, value in values.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@contextlib.contextmanager
def serving_e2b() -> Iterator[E2BFake]:
    """The e2b wire fake, with the SDK's variables pointing at it in this process and the children
    it starts (cross-process checks) until the block ends; then they are restored, and the fake's
    sandbox containers must all be gone."""
    from fakes import docker
    from fakes.e2b import E2BFake
    from fakes.e2b._sandboxes import LABEL

    with E2BFake() as server, environment(server.env()):
        assert server.edge is not None
        with server.edge.resolved():  # its preview hosts resolve to the fake's edge, at the wire
            yield server
    left = docker.leftovers(LABEL, server.owner)
    assert not left, f"the e2b fake left containers: {left}"


def stop_home(home: Path) -> None:
    """Stop every instance ``home``'s ledger records, and only those (``inventory.stop_all``
    would stop every instance the engine lists, other homes' too)."""
    from praisonai.compute import inventory

    ids = [entry.instance_id for entry in Ledger(home / "ledger.sqlite3").entries()]
    if ids:
        inventory.stop(ids)


def warm_rows(home: Path) -> list[str]:
    """The ids of the warm instances in ``home``'s ledger, oldest first."""
    sql = "SELECT instance_id FROM instances WHERE state = 'warm' ORDER BY rowid"
    rows = Ledger(home / "ledger.sqlite3").execute(sql)
    return [row[0] for row in rows]


def wait_for_refills(home: Path, timeout: float = 120.0) -> None:
    """Until no refill child holds a lock of a warm pool of ``home`` (the current
    ``PRAISONAI_HOME``) for half a second: one that let go may take it again."""
    deadline, free_since = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        held = False
        for lock in (home / "locks").glob("warm-*.lock"):
            fd = try_lock(lock.stem)
            held = held or fd is None
            if fd is not None:
                os.close(fd)
        if held:
            free_since = None
        elif free_since is None:
            free_since = time.monotonic()
        elif time.monotonic() - free_since > 0.5:
            return
        time.sleep(0.05)
    raise AssertionError(f"a refill of a warm pool still ran after {timeout:g}s")


def watchdog_notices(instance_id: str) -> str:
    """A docker instance's watchdog notices (the process limit it enforced): in the instance, since
    its container's own output is the helper's reply stream and is not logged on the host."""
    from praisonai.compute.providers.docker import container_name
    from praisonai.compute.providers.docker._main import WATCHDOG_LOG

    read = ["docker", "exec", container_name(instance_id), "cat", WATCHDOG_LOG]
    found = subprocess.run(read, capture_output=True, text=True, check=False)
    return found.stdout + found.stderr


def container_state(instance_id: str) -> str:
    """A docker instance's container state ("running", "exited"...), or "gone"."""
    from praisonai.compute.providers.docker import container_name

    inspect = ["docker", "inspect", "-f", "{{.State.Status}}", container_name(instance_id)]
    found = subprocess.run(inspect, capture_output=True, text=True, check=False)
    return found.stdout.strip() if found.returncode == 0 else "gone"


def container_running(instance_id: str) -> bool:
    """Whether a docker instance's container runs (its watchdog has not stopped it)."""
    return container_state(instance_id) == "running"


def exit_for(args: Sequence[object], code: int) -> int:
    """The CLI's status for our own failure ``code`` (1, or 2 for a mistake) of the command line
    ``args``: ``OWN_FAILURE`` (125) for a command that passes on its instance command's status."""
    return OWN_FAILURE if tuple(args[:2]) in RUNNERS else code


def wait_until(condition: Callable[[], bool], deadline_s: float) -> float:
    """Poll ``condition`` until true; return the seconds it took (fail past the deadline)."""
    start = time.monotonic()
    while not condition():
        assert time.monotonic() - start < deadline_s, f"not within {deadline_s}s"
        time.sleep(0.2)
    return time.monotonic() - start


def processes_running(marker: str) -> list[int]:
    """Processes on this machine (also the sshd host) running ``sleep <marker>``."""
    return processes_with(f"sleep\0{marker}\0".encode())


def processes_with(needle: bytes) -> list[int]:
    """Processes on this machine (also the sshd host) whose NUL-separated command line holds
    ``needle``."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if needle in cmdline.read_bytes():
                found.append(int(cmdline.parent.name))
        except OSError:
            continue
    return found


def unique_marker() -> str:
    """A ``sleep`` argument no other test's process carries (see :func:`processes_running`)."""
    return f"{500 + os.getpid() % 400}.{time.monotonic_ns() % 10**6}"


def home_reaper_pid(home: Path) -> int | None:
    """The pid of ``home``'s reaper process while it runs."""
    try:
        pid = int((home / "locks" / "home-reaper.lock").read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return None
    return pid if b"_home_reaper" in cmdline else None


def readable(fd: int, timeout_s: float) -> bool:
    """Whether ``fd`` has something to read within ``timeout_s`` (``poll``: unlike ``select``, it
    takes descriptors past 1023, which a long test run's pseudo-terminals reach)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(timeout_s * 1000))


def network_gateway(ipam: dict[str, Any]) -> str:
    """The host's address on a docker network, from its ``IPAM`` section: its ``Gateway``, or, where
    the engine leaves that out (as docker 28 does for the default bridge), its subnet's first host."""
    import ipaddress

    config = ipam["Config"][0]
    return str(config.get("Gateway") or next(ipaddress.ip_network(config["Subnet"]).hosts()))


#: A shell loop that answers each line of its stdin as it arrives.
ECHO_LINES = 'while read -r l; do echo "got $l"; done'


def answers_while_open(argv: Sequence[str]) -> None:
    """Run ``argv`` (a CLI command given ``-- sh -c ECHO_LINES``) with a pipe on its stdin: its
    answer to a first line must come while the pipe is still open (streamed, not read whole
    first), and closing the pipe must end it, with the second line answered too."""
    with subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        try:
            proc.stdin.write(b"one\n")
            proc.stdin.flush()
            assert readable(proc.stdout.fileno(), 60), "no answer while the pipe was open"
            assert proc.stdout.readline() == b"got one\n"
            proc.stdin.write(b"two\n")
            proc.stdin.close()
            assert proc.wait(60) == 0, proc.stderr.read()
            assert proc.stdout.read() == b"got two\n"
        finally:
            proc.kill()


def stops_reading_when_done(argv: Sequence[str]) -> None:
    """Run ``argv`` (given ``-- head -c 4``) fed by an endless ``yes``: it must end once the
    command ends, as ``docker run -i`` does, not wait for an input that never ends."""
    with subprocess.Popen(["yes"], stdout=subprocess.PIPE) as endless:
        try:
            r = subprocess.run(argv, stdin=endless.stdout, capture_output=True, timeout=60, check=False)
        finally:
            endless.kill()
    assert (r.returncode, r.stdout) == (0, b"y\ny\n"), r.stderr


def managed_cli(home: Path, llm_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``praisonai managed ARGS`` in a child of ``home``, its model the scripted server at
    ``llm_url`` (no Anthropic or Claude variable of this process reaches it)."""
    from praisonai.llm.testing import API_KEY

    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
    env.update(PRAISONAI_HOME=str(home), OPENAI_BASE_URL=f"{llm_url}/v1", OPENAI_API_KEY=API_KEY)
    return subprocess.run(
        [sys.executable, "-m", "praisonai", "managed", *args],
        capture_output=True, text=True, env=env, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
