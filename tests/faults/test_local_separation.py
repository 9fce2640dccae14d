"""A command of an isolated local instance cannot reach what frames its results (issue 42, items
1 and 2), real bubblewrap.

What frames results there: this process for exec, files and terminals (pipes and a pty of the
host's), the exec helper for background processes (their state and spooled output), and each
session's writer for its session. The attacker (``kit.PROC_ATTACK``) runs the three ways a
model's command can — an exec, a background process and a session command — while this process
runs execs, ``read_file``s, background processes whose output it reads, and a session's commands
beside it. Every byte received must be what was asked for, the helper must live on, and nothing
the attackers read may hold the helper's nonce, another session's secret or the env of a call
that ended before they began.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import anyio
import pytest
from kit import PROC_ATTACK, provisioned

from praisonai import _portal
from praisonai.compute.providers.local import LocalCompute
from praisonai.runtime.session import ShellSession

pytestmark = pytest.mark.usefixtures("bwrap_ok")

ATTACK_S = 4
_FILES = 4
_WAYS = ("exec", "process", "session")


@pytest.fixture
def isolated() -> Iterator[tuple[LocalCompute, str]]:
    yield from provisioned(LocalCompute(isolate=True))


def test_a_command_cannot_change_kill_or_read_what_frames_the_results(
    isolated: tuple[LocalCompute, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    provider, iid = isolated
    ended_env = secrets.token_hex(16)
    made: list[str] = []  # every secret made from here on: nonces, session secrets
    real_token = secrets.token_hex

    def recorded(n: int | None = None) -> str:
        made.append(real_token(n))
        return made[-1]

    monkeypatch.setattr(secrets, "token_hex", recorded)
    contents = {f"read-{n}": secrets.token_bytes(3000 + n) for n in range(_FILES)}

    async def scenario() -> tuple[list[str], dict[str, bytes], str]:
        assert (await provider.execute(iid, "printf x", env={"ENDED_CALL_SECRET": ended_env})).stdout == "x"
        for path, data in contents.items():
            await provider.write_file(iid, path, data)
        await provider.write_file(iid, "attack.py", PROC_ATTACK.encode())
        await provider.processes.wait(
            iid, (await provider.processes.start(iid, "true")).process_id, timeout=30
        )
        channel = await provider._channels.get(iid)
        host_session, attacker_session = await provider.open_session(iid), await provider.open_session(iid)
        wrong: list[str] = []
        ended = 0

        async def attack(way: str) -> None:
            nonlocal ended
            command = f"python3 attack.py {ATTACK_S} loot-{way}"
            try:
                if way == "exec":
                    r = await provider.execute(iid, command, timeout=ATTACK_S + 30)
                    if r.exit_code != 0:
                        wrong.append(
                            f"the exec attack failed: {r.exit_code} {r.stdout[-300:]} {r.stderr[-300:]}"
                        )
                elif way == "process":
                    started = await provider.processes.start(iid, command)
                    await provider.processes.wait(iid, started.process_id, timeout=ATTACK_S + 30)
                else:  # it may end its own session (its writer is its own): that is its call's loss
                    await attacker_session.run(command, timeout=ATTACK_S + 30)
            except Exception:
                pass
            finally:
                ended += 1

        async def host_calls() -> None:
            n = 0
            while ended < len(_WAYS):
                n += 1
                token = f"call-{n}-" + "y" * 200
                try:
                    r = await provider.execute(iid, f"printf '%s' {token}")
                    if (r.exit_code, r.stdout, r.stderr) != (0, token, ""):
                        wrong.append(f"exec {n}: {r.exit_code} {r.stdout[:80]!r} {r.stderr[:80]!r}")
                    data = await provider.read_file(iid, f"read-{n % _FILES}")
                    if data != contents[f"read-{n % _FILES}"]:
                        wrong.append(f"read_file {n}: {len(data)} bytes, FORGED in it: {b'FORGED' in data}")
                    started = await provider.processes.start(iid, f"printf '%s' {token}")
                    done = await provider.processes.wait(iid, started.process_id, timeout=30)
                    out = await provider.processes.output(iid, started.process_id)
                    if (done.exit_code, out) != (0, token.encode()):
                        forged = b"FORGED" in out
                        wrong.append(f"process {n}: {done.exit_code}, {len(out)} bytes, forged: {forged}")
                    said = await host_session.run(f"printf '%s' {token}")
                    if (said.exit_code, said.stdout, said.stderr) != (0, token, ""):
                        wrong.append(
                            f"session {n}: {said.exit_code} {said.stdout[:80]!r} {said.stderr[:80]!r}"
                        )
                except Exception as exc:  # whatever a forged reply makes of a call, it is wrong
                    wrong.append(f"call {n} failed: {exc!r}")

        try:
            async with anyio.create_task_group() as tg:
                for way in _WAYS:
                    tg.start_soon(attack, way)
                tg.start_soon(host_calls)
            if provider._channels.peek(iid) is not channel or not channel.transport.alive():
                wrong.append(f"the helper {channel.helper_pid} did not live on")
            loot = {}
            for way in _WAYS:  # each attacker lived to the end and wrote what it found
                try:
                    loot[way] = await provider.read_file(iid, f"loot-{way}")
                except FileNotFoundError:  # a session command may end its own shell, and its sandbox
                    if way != "session":
                        wrong.append(f"the {way} attack did not finish")
        finally:
            own = _secret(attacker_session)
            await host_session.close()
            await attacker_session.close()
        return wrong, loot, own

    wrong, loot, own = _portal.call(scenario)
    assert not wrong, wrong[:10]
    learned = [f"{way}: the ended call's env" for way, found in loot.items() if ended_env.encode() in found]
    learned += [
        f"{way}: {s}" for way, found in loot.items() for s in made if s != own and s.encode() in found
    ]
    assert not learned, learned[:5]


def test_no_command_holds_a_capability_or_remounts_the_system(isolated: tuple[LocalCompute, str]) -> None:
    """Started by root, bubblewrap keeps root's capabilities in its namespaces unless told not to:
    then a command could remount the host's read-only system writable and write it as root."""
    provider, iid = isolated
    probe = "grep -E '^Cap[A-Za-z]+:' /proc/self/status; mount -o remount,bind,rw /usr && echo REMOUNTED"

    async def scenario() -> list[str]:
        said = [(await provider.execute(iid, probe)).stdout]
        started = await provider.processes.start(iid, probe)
        await provider.processes.wait(iid, started.process_id, timeout=30)
        said.append((await provider.processes.output(iid, started.process_id)).decode())
        session = await provider.open_session(iid)
        try:
            said.append((await session.run(probe)).stdout)
        finally:
            await session.close()
        return said

    for output in _portal.call(scenario):
        caps = dict(line.split(":") for line in output.splitlines() if line.startswith("Cap"))
        assert len(caps) == 5 and all(int(value, 16) == 0 for value in caps.values()), output
        assert "REMOUNTED" not in output


def _secret(session: ShellSession) -> str:
    """The session's own secret: its own commands share its shell, so they may learn it."""
    return str(session._secret)
