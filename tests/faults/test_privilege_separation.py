"""A command cannot reach what frames its results (issue 42, items 1 and 2), real docker under
runc and under gVisor, and kubernetes (its API-server fake, whose pods are real docker containers).

The attacker is a command the model could write: for a few seconds it writes into every file
descriptor it can open under ``/proc/*/fd``, reads every ``/proc/*/environ``, ``cmdline`` and
``mem`` it can, and SIGKILLs every pid but its own, while the host runs execs and ``read_file``s
beside it. Every byte the host receives must be what it asked for (a command of the attacker's
own uid may be killed: then its output is a prefix of what it would have printed), the helper
must live on (same pid, calls keep working), and nothing it read may hold a job's secret, the
main channel's key (the warm pool's handoff key) or the env of a call that ended before it began.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import anyio
import pytest
from kit import PROC_ATTACK as _ATTACK
from served import TARGETS

from praisonai import _portal
from praisonai._errors import PraisonAIError
from praisonai.compute.base import ComputeProvider
from praisonai.compute.channel import ChannelMixin
from praisonai.compute.providers.docker import DockerCompute, container_name
from praisonai.compute.separation import COMMAND_UID, refusal
from praisonai.runtime import _job
from praisonai.runtime._wire import request_line
from praisonai.runtime.channel import HELPER
from praisonai.runtime.partial import PREFIX, partial_name

pytestmark = pytest.mark.usefixtures("docker_ok")

ATTACK_S = 4
#: A write's partial file (praisonai.runtime.partial)
TEMPORARY = re.compile(rf"^{re.escape(PREFIX)}[0-9a-f]+$", re.MULTILINE)
_FILES = 4


def _runtimes() -> dict[str, Any]:
    return DockerCompute().api.info().get("Runtimes") or {}


#: Where root puts files a command may read but not write (a kubernetes pod's root is read-only).
_ROOTS = "/tmp/srv"


def _provider(
    name: str, request: pytest.FixtureRequest, stack: ExitStack
) -> tuple[ComputeProvider, dict[str, Any]]:
    """docker under runtime ``name`` (runc, runsc), or kubernetes served by its fake; and the
    config its instances get."""
    if name == "kubernetes":
        served = stack.enter_context(TARGETS["kubernetes"].serve(request))
        return served.provider, served.config or {}
    return DockerCompute(runtime=name), {}


@pytest.fixture(scope="module", params=["runc", "runsc", "kubernetes"])
def attacked(
    request: pytest.FixtureRequest, skip_unless_required: Callable[[str, str | None], None]
) -> Iterator[tuple[ChannelMixin, str]]:
    """An instance of each runtime (docker: whose main channel this process adopted with its key)."""
    if request.param == "runsc":
        missing = None if "runsc" in _runtimes() else "the Docker engine has no runsc runtime registered"
        skip_unless_required("gvisor", missing)
    with ExitStack() as stack:
        provider, config = _provider(request.param, request, stack)
        assert isinstance(provider, ChannelMixin)
        iid = _portal.call(provider.provision, config).instance_id
        try:
            yield provider, iid
        finally:
            _portal.call(provider.shutdown, iid)


def test_a_command_cannot_change_kill_or_read_what_frames_the_results(
    attacked: tuple[ChannelMixin, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    provider, iid = attacked
    kept: dict[str, str] = {}
    if isinstance(provider, DockerCompute):  # the main channel's nonce: the attacker must not learn it
        kept["handoff key"] = key = provider.handoff_key(iid) or ""
        assert key
        provider.adopt(iid, key)
    job_secrets: list[str] = []
    real_token = secrets.token_hex

    def recorded(n: int | None = None) -> str:
        token = real_token(n)
        job_secrets.append(token)
        return token

    monkeypatch.setattr(_job.secrets, "token_hex", recorded)
    ended_env = secrets.token_hex(16)
    contents = {f"{_ROOTS}/read-{n}": secrets.token_bytes(3000 + n) for n in range(_FILES)}

    async def scenario() -> tuple[list[str], bytes, str]:
        before = await provider.execute(iid, "printf x", env={"ENDED_CALL_SECRET": ended_env})
        assert before.stdout == "x"
        for path, data in contents.items():  # root's files: a command may read them, not write
            made = await provider.execute(
                iid, f"mkdir -p {_ROOTS} && cat >{path}", stdin=data, privileged=True
            )
            assert made.exit_code == 0, made.stderr
        helper = (await provider._channels.get(iid)).helper_pid
        wrong: list[str] = []
        attack_done = anyio.Event()

        async def attack() -> None:
            script = "/tmp/attack.py"
            await provider.write_file(iid, script, _ATTACK.encode())
            r = await provider.execute(iid, f"python3 {script} {ATTACK_S} /tmp/loot", timeout=ATTACK_S + 30)
            if r.exit_code != 0 or not r.stdout.strip():
                wrong.append(f"the attack itself failed: {r.exit_code} {r.stdout[-300:]} {r.stderr[-300:]}")
            attack_done.set()

        async def host_calls() -> None:
            n = 0
            while not attack_done.is_set():
                n += 1
                token = f"call-{n}-" + "y" * 200
                try:
                    r = await provider.execute(iid, f"printf '%s' {token}")
                    if (r.exit_code, r.stdout, r.stderr) != (0, token, ""):
                        killed = r.exit_code == 137 and token.startswith(r.stdout) and r.stderr == ""
                        if not killed:  # the attacker may kill a command of its own uid: nothing more
                            wrong.append(f"exec {n}: {r.exit_code} {r.stdout[:80]!r} {r.stderr[:80]!r}")
                    path = f"{_ROOTS}/read-{n % _FILES}"
                    data = await provider.read_file(iid, path)
                    if data != contents[path]:
                        wrong.append(f"read_file {n}: {len(data)} bytes, FORGED in it: {b'FORGED' in data}")
                except PraisonAIError as exc:
                    wrong.append(f"call {n} failed: {exc}")

        async with anyio.create_task_group() as tg:
            tg.start_soon(attack)
            tg.start_soon(host_calls)
        after = await provider._channels.get(iid)
        if after.helper_pid != helper:
            wrong.append(f"the helper {helper} was replaced by {after.helper_pid}")
        loot = b"" if wrong else await provider.read_file(iid, "/tmp/loot")
        return wrong, loot, helper

    wrong, loot, _ = _portal.call(scenario)
    assert not wrong, wrong[:10]
    assert loot  # it did read: the exec ids in its own uid's environs, at least
    kept["ended call's env"] = ended_env
    learned = [name for name, value in kept.items() if value.encode() in loot]
    learned += [f"job secret {s}" for s in job_secrets if s.encode() in loot]
    assert not learned, learned[:5]


def test_commands_hold_no_capability_and_files_are_theirs(attacked: tuple[ChannelMixin, str]) -> None:
    """What a command is: uid 1000 through and through, no capability in any set; a file it or
    write_file makes is its; read_file cannot read what it cannot; the helper's command line and
    the spool hold nothing for it."""
    provider, iid = attacked

    async def scenario() -> None:
        status = await provider.execute(iid, "grep -E '^(Uid|Gid|Groups|Cap[A-Za-z]+):' /proc/self/status")
        fields = dict(line.split(":", 1) for line in status.stdout.splitlines())
        assert fields["Uid"].split() == ["1000"] * 4 and fields["Gid"].split() == ["1000"] * 4
        assert not fields["Groups"].strip()
        for name in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):  # gVisor has no CapAmb line
            assert int(fields.get(name, "0"), 16) == 0, status.stdout
        session = await provider.open_session(iid)
        try:
            assert (await session.run("id -u; echo $HOME")).stdout == "1000\n/home/user\n"
        finally:
            await session.close()
        process = await provider.processes.start(iid, "id -u")
        await provider.processes.wait(iid, process.process_id, timeout=30)
        assert await provider.processes.output(iid, process.process_id) == b"1000\n"
        await provider.write_file(iid, "mine.txt", b"data")
        # (python's stat: this gVisor build refuses coreutils' statx)
        show = "import os; print(*[f'{os.stat(p).st_uid}:{os.stat(p).st_gid}' for p in ('mine.txt', 'made', '.')])"  # noqa: E501
        owners = await provider.execute(iid, f'touch made && python3 -c "{show}" && echo $HOME')
        # a pod's working dir is a volume: root's, the commands' group's (fsGroup, setgid)
        workdir = "1000:1000" if isinstance(provider, DockerCompute) else "0:1000"
        assert owners.stdout.split() == ["1000:1000"] * 2 + [workdir, "/home/user"], owners.stdout
        secret = f"{_ROOTS}/secret"
        made = await provider.execute(
            iid, f"mkdir -p {_ROOTS} && echo s >{secret} && chmod 600 {secret}", privileged=True
        )
        assert made.exit_code == 0
        with pytest.raises(PermissionError):
            await provider.read_file(iid, secret)
        # the reader's own status: only its effective uid is the command's, so none can kill it
        reader = (await provider.read_file(iid, "/proc/self/status")).decode()
        assert [line.split()[1:] for line in reader.splitlines() if line.startswith("Uid:")] == [
            ["0", "1000", "0", "1000"]
        ], reader
        with pytest.raises(PermissionError):
            await provider.write_file(iid, secret, b"x")
        helper = (await provider._channels.get(iid)).helper_pid
        for reach in ("ls /tmp/.praisonai*/x", f"ls /proc/{helper}/fd", f"kill -9 {helper}"):
            assert (await provider.execute(iid, reach)).exit_code != 0, reach
        extra = await provider._open_channel(iid)  # an exec channel's helper: its nonce is on no argv
        try:
            argvs = await provider.execute(iid, "cat /proc/[0-9]*/cmdline | tr '\\0' ' '")
            assert "praisonai-helper" in argvs.stdout and "@pz" not in argvs.stdout, argvs.stdout[-500:]
        finally:
            extra.close()
        # gVisor lets any uid read a process's environ: the helper's holds nothing of the bound env
        bound = secrets.token_hex(16)
        await provider.processes.bind_env(iid, {"BOUND_SECRET": bound})
        assert (await provider.execute(iid, "printf %s $BOUND_SECRET")).stdout == bound
        environ = await provider.execute(iid, f"cat /proc/{helper}/environ")
        assert environ.exit_code != 0 or bound not in environ.stdout

    _portal.call(scenario)


def test_a_plain_command_started_without_a_shell_is_the_same_command(
    attacked: tuple[DockerCompute, str],
) -> None:
    """A command of one program and plain words is started by setpriv itself, without a shell
    (helper.sh's __p_plain): it is uid 1000 with no capability all the same, and its result, env
    and stderr are what /bin/sh gives the same words (``;`` sends them through the shell)."""
    provider, iid = attacked

    async def both(command: str, **options: Any) -> list[tuple[int | None, str, str]]:
        results = [await provider.execute(iid, c, **options) for c in (command, f"{command};")]
        return [(r.exit_code, r.stdout, r.stderr) for r in results]

    async def parent_user(command: str) -> str:
        """Who started ``command``'s process: root's job (plain) or the command uid's shell."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(provider.execute, iid, command)
            await anyio.sleep(0.5)
            found = await provider.execute(
                iid, "ps -o user= -p $(ps -o ppid= -p $(pgrep -x sleep))", privileged=True
            )
        return found.stdout.strip()

    async def scenario() -> None:
        assert await parent_user("sleep 1.5") == "root"  # no shell between: the helper's job
        assert await parent_user("sleep 1.5;") == "user"
        status: list[str] = []
        for field in ("Uid:", "Gid:", "Groups:", "Cap"):
            plain, through_sh = await both(f"grep {field} /proc/self/status")
            assert plain == through_sh and plain[0] == 0, (plain, through_sh)
            status += plain[1].splitlines()
        fields = dict(line.split(":", 1) for line in status)
        assert fields["Uid"].split() == ["1000"] * 4 and fields["Gid"].split() == ["1000"] * 4, status
        assert not fields["Groups"].strip(), status
        for name in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):  # gVisor has no CapAmb line
            assert int(fields.get(name, "0"), 16) == 0, status
        for command in ("ls /nonexistent", "nosuchcommand x", "/etc/passwd x", "id -un", "python3 -V"):
            plain, through_sh = await both(command)
            assert plain == through_sh, (command, plain, through_sh)
        plain, through_sh = await both("env", env={"CALL_VALUE": "v"}, cwd="/tmp")
        envs = [
            {x for x in r[1].splitlines() if not x.startswith("PRAISONAI_EXEC_ID=")}
            for r in (plain, through_sh)
        ]
        assert envs[0] == envs[1] and {"CALL_VALUE=v", "PWD=/tmp", "HOME=/home/user"} <= envs[0], envs

    _portal.call(scenario)


def test_an_ifs_in_a_commands_env_splits_nothing_of_the_helpers(attacked: tuple[DockerCompute, str]) -> None:
    """``env={"IFS": ":"}`` is the command's: the helper split setpriv's words with it once it was
    exported, so every separated command and background process given it failed (127, "setpriv
    ...: not found"); they run as uid 1000 as any other does."""
    provider, iid = attacked

    async def scenario() -> None:
        for command in ("id -u", "id -u;", "true " + "x" * 40_000):  # plain, through sh, from a file
            r = await provider.execute(iid, command, env={"IFS": ":"})
            assert (r.exit_code, r.stderr) == (0, ""), (command[:20], r)
            assert r.stdout in ("1000\n", ""), r.stdout
        process = await provider.processes.start(iid, "id -u", env={"IFS": ":"})
        await provider.processes.wait(iid, process.process_id, timeout=30)
        assert await provider.processes.output(iid, process.process_id) == b"1000\n"

    _portal.call(scenario)


def test_a_terminal_sources_no_bound_env_a_command_wrote(attacked: tuple[ChannelMixin, str]) -> None:
    """A terminal starts as root and sources the instance's bound env from the spool before it
    drops to the commands' uid: a command that could write that file would run code as root
    there. It cannot (the spool is root's), and what the host bound still reaches the terminal."""
    provider, iid = attacked
    env_file, pwned = f"{provider._spool(iid)}/env", f"/tmp/pz-pwned-{secrets.token_hex(4)}"

    async def scenario() -> None:
        await provider.processes.bind_env(iid, {"PZ_BOUND": "host"})
        planted = await provider.execute(iid, f"printf 'touch {pwned}\\n' >> {env_file}")
        assert planted.exit_code != 0, "a command wrote the spool's bound env"
        async with await provider.open_pty(iid, command='echo "[$PZ_BOUND]"') as pty:
            out = b""
            while chunk := await pty.read():
                out += chunk
        assert b"[host]" in out, out
        found = await provider.execute(iid, f"test -e {pwned} && echo PWNED || true", privileged=True)
        assert found.stdout == "", "a command's line ran as root in a terminal's start"

    _portal.call(scenario)


def test_a_users_write_cut_inside_its_payload_keeps_the_old_file(attacked: tuple[DockerCompute, str]) -> None:
    """The client dies inside a separated write's payload (the perl writer where the image has perl,
    as the sandbox image does): the file keeps its old content, no partial file is left, and the
    helper never says the write succeeded."""
    provider, iid = attacked
    request = request_line("__p_fwrite", "n1", "/workspace/kept.txt", "100", partial_name()) + b"x" * 40
    helper = (
        "rm -rf /tmp/cut-spool; printf 'old content' >kept.txt && chown 1000:1000 kept.txt "
        '&& sh -c "$(cat /tmp/helper.sh)" praisonai-helper /tmp/cut-spool - attached 1000:1000'
    )

    async def scenario() -> tuple[str, bytes, str]:
        await provider.write_file(iid, "/tmp/helper.sh", HELPER.encode())
        cut = await provider.execute(iid, helper, stdin=b": NONCE\n" + request, privileged=True)
        listing = (await provider.execute(iid, "ls -A /workspace")).stdout
        return cut.stdout, await provider.read_file(iid, "/workspace/kept.txt"), listing

    replies, kept, listing = _portal.call(scenario)
    assert replies.startswith("NONCE ") and "n1 0" not in replies, replies
    assert kept == b"old content"
    assert not TEMPORARY.findall(listing), listing


@pytest.mark.parametrize("name", ["runc", "kubernetes"])
def test_an_image_that_cannot_switch_users_is_refused_in_one_sentence(
    name: str, request: pytest.FixtureRequest, docker_ok: None
) -> None:
    """Without setpriv the helper cannot run commands apart from itself: its channel says so,
    rather than running them as root unseparated."""
    import docker

    builder = DockerCompute()
    base = _portal.call(builder.provision).instance_id
    tag = f"praisonai-test-no-setpriv:{secrets.token_hex(4)}"
    client = docker.from_env()
    try:
        gone = _portal.call(lambda: builder.execute(base, "rm /usr/bin/setpriv", privileged=True))
        assert gone.exit_code == 0, gone.stderr
        client.containers.get(container_name(base)).commit(*tag.split(":"))
    finally:
        _portal.call(builder.shutdown, base)
    try:
        with ExitStack() as stack:
            provider, config = _provider(name, request, stack)
            iid = _portal.call(lambda: provider.provision({**config, "image": tag})).instance_id
            try:
                with pytest.raises(PraisonAIError, match="needs root and setpriv") as refused:
                    _portal.call(provider.execute, iid, "true")
                # the helper's sentence is the one Fly and Tenki say, but for perl (theirs need it)
                said = refusal(f"{COMMAND_UID}:{COMMAND_UID}", perl=False)
                assert said in str(refused.value), str(refused.value)
                as_root = {**config, "image": tag, "command_user": "root"}
                plain = _portal.call(lambda: provider.provision(as_root)).instance_id
                try:
                    assert _portal.call(provider.execute, plain, "id -u").stdout == "0\n"
                finally:
                    _portal.call(provider.shutdown, plain)
            finally:
                _portal.call(provider.shutdown, iid)
    finally:
        client.images.remove(tag, force=True)
        client.close()
