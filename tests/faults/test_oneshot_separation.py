"""A command cannot reach what frames its results on the one-shot providers, Fly and Tenki
(issue 42, items 1 and 2), against their wire fakes, whose machines are real docker containers.

There every exec is a script of its own: Fly's starts the command in the background and leaves
its stdout, stderr and exit code in a job directory that later execs read, under the watchdog
(PID 1); Tenki's guest agent streams them; on both, background processes live in the one-shot
helper's spool. The attacker is a command the model could write: for a few seconds it rewrites
every file it can find under those job directories and spools, writes into every descriptor it
can open under ``/proc/*/fd``, reads every ``/proc/*/environ`` and SIGKILLs every pid but its own,
while the host runs execs (with their exit codes), ``read_file``s and ``write_file``s beside it.
Every byte and exit code the host receives must be what it asked for (a command of the attacker's
own uid may be killed: then its output is a prefix of what it would have printed and its code
137), a background process started before keeps its output, the env of a call that ended before
it began stays unread, and the watchdog lives on.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import anyio
import pytest
from served import TARGETS, Served

from praisonai import _portal
from praisonai._errors import PraisonAIError
from praisonai.compute.base import ComputeProvider
from praisonai.compute.separation import COMMAND_UID, refusal

ATTACK_S = 4
# Python, which the sandbox image has: non-blocking opens, so a FIFO without a reader cannot stall it.
_ATTACK = r"""
import os, signal, sys, time
me, end, forged, loot = os.getpid(), time.time() + float(sys.argv[1]), 0, []
roots = ["/tmp/.praisonai", "/tmp/.praisonai-exec", "/tmp/.praisonai-spool", "/tmp/.praisonai-xfer"]
def forge(path):
    global forged
    try:
        f = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return
    try:
        os.write(f, b"99\nFORGED\n"); forged += 1
    except OSError:
        pass
    os.close(f)
while time.time() < end:
    for root in roots:
        for top, dirs, files in os.walk(root):
            for name in files:
                forge(os.path.join(top, name))
    for pid in [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (me, os.getppid())]:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            fds = []
        for fd in fds:
            forge(f"/proc/{pid}/fd/{fd}")
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                loot.append(f.read())
        except OSError:
            pass
        try:
            os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass
with open(sys.argv[2], "wb") as out:
    out.write(b"\n".join(loot))
print(forged, len(loot))
"""
_FILES = 3


@pytest.fixture(scope="module", params=["flyio", "tenki"])
def attacked(request: pytest.FixtureRequest) -> Iterator[tuple[ComputeProvider, str]]:
    """An instance of each one-shot provider, on its wire fake."""
    with TARGETS[request.param].serve(request) as served:
        yield from _instance(served)


def _instance(served: Served) -> Iterator[tuple[ComputeProvider, str]]:
    provider = served.provider
    iid = _portal.call(lambda: provider.provision(served.config)).instance_id
    try:
        yield provider, iid
    finally:
        _portal.call(provider.shutdown, iid)


def test_a_command_cannot_change_or_kill_what_frames_the_results(
    attacked: tuple[ComputeProvider, str],
) -> None:
    provider, iid = attacked
    ended_env = secrets.token_hex(16)
    contents = {f"/srv/read-{n}": secrets.token_bytes(3000 + n) for n in range(_FILES)}

    async def scenario() -> tuple[list[str], bytes]:
        before = await provider.execute(iid, "printf x", env={"ENDED_CALL_SECRET": ended_env})
        assert before.stdout == "x"
        for path, data in contents.items():  # root's files: a command may read them, not write
            made = await provider.execute(iid, f"mkdir -p /srv && cat >{path}", stdin=data, privileged=True)
            assert made.exit_code == 0, made.stderr
        background = await provider.processes.start(iid, "printf background-output; exit 5")
        await provider.processes.wait(iid, background.process_id, timeout=30)
        watchdog = (await provider.execute(iid, "cat /proc/1/cmdline", privileged=True)).stdout
        wrong: list[str] = []
        attack_done = anyio.Event()

        async def attack() -> None:
            await provider.write_file(iid, "/tmp/attack.py", _ATTACK.encode())
            try:
                attack = f"python3 /tmp/attack.py {ATTACK_S} /tmp/loot"
                r = await provider.execute(iid, attack, timeout=ATTACK_S + 30)
                if r.exit_code != 0 or not r.stdout.strip():
                    wrong.append(f"the attack failed: {r.exit_code} {r.stdout[-300:]} {r.stderr[-300:]}")
            except PraisonAIError as exc:  # it broke its own call's framing
                wrong.append(f"the attack's own call failed: {exc}")
            finally:
                attack_done.set()

        async def host_calls() -> None:
            n = 0
            while not attack_done.is_set():
                n += 1
                token = f"call-{n}-" + "y" * 200
                try:
                    r = await provider.execute(iid, f"printf '%s' {token}; exit {n % 7}", timeout=15)
                    if (r.exit_code, r.stdout, r.stderr) != (n % 7, token, ""):
                        killed = r.exit_code == 137 and token.startswith(r.stdout) and r.stderr == ""
                        if not killed:  # the attacker may kill a command of its own uid: nothing more
                            wrong.append(f"exec {n}: {r.exit_code} {r.stdout[:80]!r} {r.stderr[:80]!r}")
                    path = f"/srv/read-{n % _FILES}"
                    data = await provider.read_file(iid, path)
                    if data != contents[path]:
                        wrong.append(f"read_file {n}: {len(data)} bytes, FORGED in it: {b'FORGED' in data}")
                    mine = secrets.token_bytes(2000 + n)
                    await provider.write_file(iid, f"mine-{n}", mine)
                    if await provider.read_file(iid, f"mine-{n}") != mine:
                        wrong.append(f"write_file {n}: read back changed")
                except PraisonAIError as exc:
                    wrong.append(f"call {n} failed: {exc}")

        async with anyio.create_task_group() as tg:
            tg.start_soon(attack)
            tg.start_soon(host_calls)
        try:
            wrong.extend(await _what_changed(provider, iid, background.process_id, watchdog))
        except PraisonAIError as exc:
            wrong.append(f"the instance is broken after the attack: {exc}")
        loot = b"" if wrong else await provider.read_file(iid, "/tmp/loot")
        return wrong, loot

    wrong, loot = _portal.call(scenario)
    assert not wrong, wrong[:10]
    assert ended_env.encode() not in loot


async def _what_changed(provider: ComputeProvider, iid: str, process_id: str, watchdog: str) -> list[str]:
    """What the attack changed of a background process started before it, and of PID 1."""
    changed = []
    kept = await provider.processes.output(iid, process_id)
    if kept != b"background-output":
        changed.append(f"the background process's output became {kept[:80]!r}")
    info = await provider.processes.get(iid, process_id)
    if info.exit_code != 5:
        changed.append(f"the background process's exit code became {info.exit_code}")
    after = await provider.execute(iid, "cat /proc/1/cmdline", privileged=True)
    if after.stdout != watchdog:
        changed.append(f"PID 1 changed: {watchdog[:60]!r} -> {after.stdout[:60]!r}")
    return changed


def test_commands_hold_no_capability_and_files_are_theirs(attacked: tuple[ComputeProvider, str]) -> None:
    """What a command is: uid 1000 through and through, no capability in any set; a file it or
    write_file makes is its; read_file and write_file cannot do what it cannot; the framing is out
    of its reach; privileged=True is root."""
    provider, iid = attacked

    async def scenario() -> None:
        status = await provider.execute(iid, "grep -E '^(Uid|Gid|Groups|Cap[A-Za-z]+):' /proc/self/status")
        fields = dict(line.split(":", 1) for line in status.stdout.splitlines())
        assert fields["Uid"].split() == ["1000"] * 4 and fields["Gid"].split() == ["1000"] * 4
        assert not fields["Groups"].strip()
        for name in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
            assert int(fields[name], 16) == 0, status.stdout
        killed = await provider.execute(iid, "printf a; kill -9 $$")  # nothing of ours speaks in its output
        assert (killed.exit_code, killed.stdout, killed.stderr) == (137, "a", ""), killed
        process = await provider.processes.start(iid, "id -u")
        await provider.processes.wait(iid, process.process_id, timeout=30)
        assert await provider.processes.output(iid, process.process_id) == b"1000\n"
        await provider.write_file(iid, "mine.txt", b"data")
        owners = await provider.execute(iid, "touch made && stat -c %u:%g mine.txt made . && echo $HOME")
        assert owners.stdout.split() == ["1000:1000"] * 3 + ["/home/user"], owners.stdout
        made = await provider.execute(iid, "echo s >/srv/secret && chmod 600 /srv/secret", privileged=True)
        assert made.exit_code == 0 and (await provider.execute(iid, "id -u", privileged=True)).stdout == "0\n"
        with pytest.raises(PermissionError):
            await provider.read_file(iid, "/srv/secret")
        with pytest.raises(PermissionError):
            await provider.write_file(iid, "/srv/secret", b"x")
        for reach in ("ls /tmp/.praisonai/bg", "ls /tmp/.praisonai-exec", "ls /proc/1/fd", "kill -9 1"):
            assert (await provider.execute(iid, reach)).exit_code != 0, reach

    _portal.call(scenario)


def test_an_instance_that_cannot_switch_users_is_refused_in_one_sentence(
    attacked: tuple[ComputeProvider, str],
) -> None:
    """Without setpriv no command runs unseparated: each says why in one sentence naming both ways
    out; a privileged call still runs (and puts it back)."""
    provider, iid = attacked
    gone = _portal.call(
        lambda: provider.execute(iid, "mv /usr/bin/setpriv /usr/bin/setpriv.gone", privileged=True)
    )
    assert gone.exit_code == 0, gone.stderr
    try:
        for call in (
            lambda: provider.execute(iid, "true"),
            lambda: provider.read_file(iid, "mine.txt"),
            lambda: provider.write_file(iid, "mine.txt", b"x"),
        ):
            with pytest.raises(PraisonAIError, match="needs root, setpriv") as refused:
                _portal.call(call)
            assert refusal(f"{COMMAND_UID}:{COMMAND_UID}") in str(refused.value), str(refused.value)
    finally:
        back = _portal.call(
            lambda: provider.execute(iid, "mv /usr/bin/setpriv.gone /usr/bin/setpriv", privileged=True)
        )
        assert back.exit_code == 0, back.stderr
