"""A session's command cannot reach what frames its shell's replies (issue 42, item 1), real
docker under runc and under gVisor.

The end of each session command is framed by a writer process holding a per-session secret
(runtime/session.sh). The attacker is a program a session command runs, as the commands' uid: it
reads every ``/proc/*/environ``, ``cmdline`` and ``mem`` it can for the secret, writes a status
line ("0") into every pipe it can open under ``/proc/*/fd`` to end its command early with a
forged exit code (and so push the rest of its output, and its real status, into the next
command's reply), and SIGKILLs every process but itself and its ancestors (its own shell) to end
the session's calls. The host must get each command's own output and status, and the session
must go on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import anyio
import pytest

from praisonai import _portal
from praisonai.compute.providers.docker import DockerCompute

pytestmark = pytest.mark.usefixtures("docker_ok")

# Python, which the sandbox image has. argv: loot FILE | forge | reach | inject FILE | kill.
_ATTACK = r"""
import os, re, signal, sys
me, mode = os.getpid(), sys.argv[1]
def ancestors():
    pid, seen = me, set()
    while pid > 1:
        seen.add(pid)
        with open(f"/proc/{pid}/stat") as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
    return seen
others = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != me]
def _open(pid, fd):
    try:
        os.close(os.open(f"/proc/{pid}/fd/{fd}", os.O_WRONLY | os.O_NONBLOCK))
        return True
    except OSError:
        return False
if mode == "loot":  # every 32 hex digits that could be the secret
    loot = set()
    for pid in others:
        for name in ("environ", "cmdline"):
            try:
                with open(f"/proc/{pid}/{name}", "rb") as f:
                    loot.update(re.findall(rb"[0-9a-f]{32}", f.read()))
            except OSError:
                pass
        try:
            with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
                for line in maps:
                    span, perms = line.split()[:2]
                    lo, hi = (int(x, 16) for x in span.split("-"))
                    if "r" in perms:
                        try:
                            mem.seek(lo)
                            loot.update(re.findall(rb"[0-9a-f]{32}", mem.read(min(hi - lo, 4 << 20))))
                        except (OSError, ValueError, OverflowError):
                            pass
        except OSError:
            pass
    with open(sys.argv[2], "wb") as out:
        out.write(b"\n".join(loot))
elif mode == "forge":  # a status line into every pipe: the writer's among them, if it can reach it
    forged = 0
    for pid in others:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if not os.readlink(f"/proc/{pid}/fd/{fd}").startswith("pipe:"):
                    continue
                f = os.open(f"/proc/{pid}/fd/{fd}", os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                continue
            try:
                os.write(f, b"\n0\n"); forged += 1
            except OSError:
                pass
            os.close(f)
    print("forged", forged, file=sys.stderr)
elif mode == "reach":  # its own shell: trace it (then it could write as it), or take its fds
    import ctypes
    libc, shell, reached = ctypes.CDLL(None, use_errno=True), os.getppid(), []
    if libc.ptrace(16, shell, 0, 0) == 0:  # PTRACE_ATTACH
        reached.append("traced"); libc.ptrace(17, shell, 0, 0)
    try:
        pidfd = os.pidfd_open(shell)
        for fd in range(64):
            got = libc.syscall(438, pidfd, fd, 0)  # pidfd_getfd
            if got >= 0:
                reached.append(f"took fd {fd}"); os.close(got)
    except OSError as exc:
        reached.append(f"(no pidfd: {exc})")
    try:
        reached += [f"opened fd {fd}" for fd in os.listdir(f"/proc/{shell}/fd") if _open(shell, fd)]
    except OSError:
        pass
    print(*reached, sep="\n")
elif mode == "inject":  # stay, with the session's stdin: type a request into it, read the next ones
    if os.fork():
        sys.exit(0)
    import select, time
    with open(sys.argv[2], "wb", 0) as stolen:
        time.sleep(0.2)
        try:
            typed = os.open("/proc/self/fd/0", os.O_WRONLY | os.O_NONBLOCK)
            os.write(typed, b"\n__p_run s_forgedforged00 'sleep 1; echo FORGED'\n")
        except OSError as exc:
            stolen.write(f"(could not type: {exc})".encode())
        end = time.time() + 3
        while time.time() < end:
            if select.select([0], [], [], 0.1)[0]:
                stolen.write(os.read(0, 65536))
else:  # kill everything that is not this process's own shell
    mine = ancestors()
    for pid in others:
        if pid not in mine:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
"""
_SCRIPT = "/tmp/session-attack.py"


def _runtimes() -> dict[str, Any]:
    return DockerCompute().api.info().get("Runtimes") or {}


@pytest.fixture(scope="module", params=["runc", "runsc"])
def attacked(
    request: pytest.FixtureRequest, skip_unless_required: Callable[[str, str | None], None]
) -> Iterator[tuple[DockerCompute, str]]:
    """An instance of each runtime, with the attacker's script in it."""
    if request.param == "runsc":
        missing = None if "runsc" in _runtimes() else "the Docker engine has no runsc runtime registered"
        skip_unless_required("gvisor", missing)
    provider = DockerCompute(runtime=request.param)
    iid = _portal.call(provider.provision).instance_id
    try:
        _portal.call(provider.write_file, iid, _SCRIPT, _ATTACK.encode())
        yield provider, iid
    finally:
        _portal.call(provider.shutdown, iid)


def test_a_session_command_cannot_learn_the_shells_secret(attacked: tuple[DockerCompute, str]) -> None:
    provider, iid = attacked

    async def scenario() -> tuple[str, bytes]:
        session = await provider.open_session(iid)
        try:
            looted = await session.run(f"python3 {_SCRIPT} loot /tmp/session-loot", timeout=60)
            assert looted.exit_code == 0, looted.stderr
            return session._secret, await provider.read_file(iid, "/tmp/session-loot")
        finally:
            await session.close()

    secret, loot = _portal.call(scenario)
    assert secret and secret.encode() not in loot


def test_a_session_command_cannot_forge_its_end_or_the_next_commands(
    attacked: tuple[DockerCompute, str],
) -> None:
    provider, iid = attacked

    async def scenario() -> None:
        session = await provider.open_session(iid)
        try:
            forged = await session.run(f"python3 {_SCRIPT} forge; echo REAL-END; exit 3", timeout=30)
            assert (forged.exit_code, "REAL-END" in forged.stdout) == (3, True), forged
            # the shell ended with `exit 3`: the next command starts a fresh one
            after = await session.run("echo next", timeout=30)
            assert (after.exit_code, after.stdout) == (0, "next\n"), after
            forged = await session.run(f"python3 {_SCRIPT} forge; echo REAL-END; false", timeout=30)
            assert (forged.exit_code, "REAL-END" in forged.stdout) == (1, True), forged
            after = await session.run("echo next", timeout=30)
            assert (after.exit_code, after.stdout) == (0, "next\n"), after
        finally:
            await session.close()

    _portal.call(scenario)


def test_a_program_left_with_the_sessions_input_cannot_type_or_read_requests(
    attacked: tuple[DockerCompute, str],
) -> None:
    """A program that outlives its command keeps the shell's stdin (where input sent to a command
    goes): a request it types there must not run, and the next requests must not reach it."""
    provider, iid = attacked

    async def scenario() -> bytes:
        session = await provider.open_session(iid)
        try:
            left = await session.run(f"python3 {_SCRIPT} inject /tmp/session-stolen", timeout=30)
            assert left.exit_code == 0, left
            for command, expected in (("echo real; false", (1, "real\n")), ("echo again", (0, "again\n"))):
                r = await session.run(command, timeout=30)
                assert (r.exit_code, r.stdout) == expected, r
            await anyio.sleep(3)  # the program's reading ends
            return await provider.read_file(iid, "/tmp/session-stolen")
        finally:
            await session.close()

    stolen = _portal.call(scenario)
    assert b"echo real" not in stolen and b"echo again" not in stolen, stolen


def test_a_session_commands_program_cannot_trace_its_shell_or_take_its_fds(
    attacked: tuple[DockerCompute, str],
) -> None:
    """What the forging test rests on: the shell is the only process that can write to its
    writer, so a program it runs must not be able to act as it, through ptrace or its fds."""
    provider, iid = attacked

    async def scenario() -> None:
        session = await provider.open_session(iid)
        try:
            reached = await session.run(f"python3 {_SCRIPT} reach", timeout=30)
            assert (reached.exit_code, reached.stderr) == (0, ""), reached
            assert [
                line for line in reached.stdout.splitlines() if line and not line.startswith("(")
            ] == [], reached
        finally:
            await session.close()

    _portal.call(scenario)


def test_a_session_command_cannot_kill_what_frames_its_shells_replies(
    attacked: tuple[DockerCompute, str],
) -> None:
    provider, iid = attacked

    async def scenario() -> None:
        session = await provider.open_session(iid)
        try:
            await session.run("cd /tmp && export KEPT=yes", timeout=30)
            killed = await session.run(f"python3 {_SCRIPT} kill; echo alive", timeout=20)
            assert (killed.exit_code, killed.stdout) == (0, "alive\n"), killed
            kept = await session.run('echo "$PWD $KEPT"', timeout=20)
            assert (kept.exit_code, kept.stdout, session.restarts) == (0, "/tmp yes\n", 0), kept
        finally:
            await session.close()

    _portal.call(scenario)


def test_the_shell_apart_still_behaves_as_a_terminal(attacked: tuple[DockerCompute, str]) -> None:
    """Input, interrupt, a timeout and `exit` through the relay, with state kept between commands."""
    provider, iid = attacked

    async def scenario() -> None:
        session = await provider.open_session(iid)
        try:
            await session.run("cd /tmp && KEPT=yes", timeout=30)
            asked = await session.run("read a; echo got $a", timeout=30, idle_timeout=1)
            assert asked.running, asked
            await session.send("typed\n")
            answered = await session.read(timeout=30)
            assert (answered.exit_code, answered.stdout, answered.running) == (0, "got typed\n", False)
            long = await session.run("sleep 60", timeout=90, idle_timeout=1)
            assert long.running, long
            stopped = await session.interrupt(timeout=30)  # SIGINT: 128 + 2
            assert (stopped.running, stopped.timed_out, stopped.exit_code) == (False, False, 130), stopped
            kept = await session.run('echo "$PWD $KEPT"', timeout=30)
            assert (kept.stdout, session.restarts) == ("/tmp yes\n", 0), kept
            timed = await session.run("sleep 30", timeout=1)
            assert timed.timed_out, timed
            assert (await session.run("echo $KEPT.", timeout=30)).stdout == ".\n"
            assert (await session.run("exit 5", timeout=30)).exit_code == 5
            assert ((await session.run("echo fresh", timeout=30)).stdout, session.restarts) == ("fresh\n", 2)
        finally:
            await session.close()

    _portal.call(scenario)
