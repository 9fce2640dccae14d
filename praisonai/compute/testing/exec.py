"""Conformance checks for the exec contract beyond run-and-return: stdin, streaming, output
bounds, concurrency, a killed helper (at most once), background processes and shell sessions.

Listed in :data:`praisonai.compute.testing.SUITES`. Those about background processes and sessions
need the ``processes`` and ``sessions`` capabilities; those that kill the helper need a channel.
"""

from __future__ import annotations

import resource
import signal
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio

from praisonai._errors import ChannelClosedError, ConfigError, ExecError
from praisonai._types import Capability, ExecRequest, ExecResult, SessionResult
from praisonai.compute.channel import ChannelMixin
from praisonai.compute.testing._kit import Context, Suite

suite = Suite()
PROCESSES, SESSIONS = Capability.PROCESSES, Capability.SESSIONS


def _channelled(ctx: Context) -> ChannelMixin:
    assert isinstance(ctx.provider, ChannelMixin), "this check drives the helper channel"
    return ctx.provider


@suite.check()
async def stdin_is_closed_unless_given(ctx: Context) -> None:
    started = time.monotonic()
    r = await ctx.sh("cat", timeout=20)
    assert r.ok and r.stdout == "" and time.monotonic() - started < 10, f"bare cat must return at once: {r}"
    r = await ctx.sh("wc -c", stdin=bytes(range(256)) * 4)
    assert r.stdout.strip() == "1024", f"stdin bytes must arrive intact: {r}"


@suite.check()
async def stream_delivers_output_while_running(ctx: Context) -> None:
    seen: list[tuple[float, str, bytes]] = []
    r = await ctx.sh(
        "echo first; echo oops >&2; sleep 1.5; echo last",
        on_output=lambda name, data: seen.append((time.monotonic(), name, data)),
    )
    ended = time.monotonic()
    assert r.stdout == "first\nlast\n" and r.stderr == "oops\n", r
    first = next((t for t, name, data in seen if name == "stdout" and data.startswith(b"first")), ended)
    assert ended - first > 1.0, f"output was not streamed while the command ran: {seen}"
    assert b"".join(d for _, n, d in seen if n == "stderr") == b"oops\n", seen


@suite.check()
async def stdin_streams_while_running(ctx: Context) -> None:
    """A streamed stdin reaches the command chunk by chunk: it answers the first line before the
    second is sent, and sees the end when the stream ends."""
    answered, said = anyio.Event(), bytearray()

    def sink(name: str, data: bytes) -> None:
        said.extend(data)
        if b"got one" in said:
            answered.set()

    async def lines() -> AsyncIterator[bytes]:
        yield b"one\n"
        with anyio.fail_after(10):  # the command must have answered line one by now
            await answered.wait()
        yield b"two\n"

    r = await ctx.sh('while read -r l; do echo "got $l"; done', stdin=lines(), on_output=sink, timeout=60)
    assert r.ok and r.stdout == "got one\ngot two\n", r


@suite.check()
async def huge_output_is_capped_in_bounded_memory(ctx: Context) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    r = await ctx.sh("yes | head -c 100000000", timeout=120)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert r.ok and r.truncated and len(r.stdout) < 2_000_000, (len(r.stdout), r.truncated)
    assert r.stdout.startswith("y\ny\n") and r.stdout.endswith("y\ny\n"), "head and tail must be kept"
    assert grown_mb < 64, f"capturing 100 MB grew this process by {grown_mb:.0f} MB"


@suite.check()
async def two_hundred_concurrent_commands(ctx: Context) -> None:
    results = []

    async def one(i: int) -> None:
        results.append(await ctx.sh(f"echo {i}", timeout=120))

    async with anyio.create_task_group() as tg:
        for i in range(200):
            tg.start_soon(one, i)
    failed = [r for r in results if not r.ok][:3]
    assert sorted(int(r.stdout) for r in results if r.ok) == list(range(200)), failed


@suite.check(PROCESSES, channel=True)
async def killed_helper_is_survived(ctx: Context) -> None:
    await ctx.provider.processes.list(ctx.instance_id)  # opens the channel
    channel = await _channelled(ctx)._channels.get(ctx.instance_id)
    if not channel.transport.signal_group(signal.SIGKILL):
        await ctx.sh(f"kill -9 {channel.helper_pid}", privileged=True)  # commands may not (docker)
    await anyio.sleep(0.1)
    assert isinstance(await ctx.provider.processes.list(ctx.instance_id), list)
    r = await ctx.sh("echo back")
    assert r.stdout == "back\n", r
    again = await _channelled(ctx)._channels.get(ctx.instance_id)
    assert again is not channel, "a new channel was not opened"


@suite.check(channel=True)
async def helper_killed_during_a_job_runs_it_at_most_once(ctx: Context) -> None:
    """The helper is killed before it reads a job, while the job runs, and after the job's end
    notice but before its output is fetched. Each time the command runs at most once, and the
    caller gets its true result or ``ChannelClosedError`` (it may have run); never a re-run."""
    marker = await ctx.sh('echo "${PRAISONAI_EXEC_ID:-}"')
    if not marker.stdout.strip():
        return  # this provider's exec does not go through a helper: nothing to kill
    killer = await _channelled(ctx)._open_channel(ctx.instance_id)  # a second helper, to kill the first
    try:
        for point in ("before-it-reads", "while-it-runs", "after-the-end-notice"):
            await _kill_at(ctx, killer, point)
    finally:
        killer.close()
        await ctx.sh("rm -f amo-*")


async def _kill_at(ctx: Context, killer: Any, point: str) -> None:
    channel = await _channelled(ctx)._channels.get(ctx.instance_id)

    async def kill_helper() -> None:
        kill = ExecRequest(
            f"kill -9 {channel.helper_pid}", cwd="/", timeout=10, max_output=1000, privileged=True
        )
        await killer.exec(kill)

    outcome: list[ExecResult | BaseException] = []

    async def run(command: str) -> None:
        try:
            outcome.append(await ctx.sh(command, timeout=60))
        except ChannelClosedError as exc:
            outcome.append(exc)

    command = f"echo run >> amo-{point}; sleep {1 if point == 'while-it-runs' else 0}; echo done"
    if point == "before-it-reads":
        async with anyio.create_task_group() as tg:  # a running job holds the channel open
            tg.start_soon(lambda: ctx.sh("sleep 1.5"))
            await anyio.sleep(0.3)
            await kill_helper()
            await run(command)
    elif point == "while-it-runs":
        async with anyio.create_task_group() as tg:
            tg.start_soon(run, command)
            await anyio.sleep(0.4)
            await kill_helper()
    else:
        original: Callable[..., Awaitable[None]] = channel.fetch

        async def fetch_after_killing(*args: Any) -> None:
            await kill_helper()
            with anyio.fail_after(20):
                while channel.is_open:
                    await anyio.sleep(0.02)
            await original(*args)

        channel.fetch = fetch_after_killing  # type: ignore[method-assign,assignment]
        await run(command)
    runs = (await ctx.sh(f"cat amo-{point} 2>/dev/null | wc -l")).stdout.strip()
    (result,) = outcome
    if isinstance(result, BaseException):
        assert runs in ("0", "1"), f"{point}: ran {runs} times and raised {result!r}"
        assert "may have run" in str(result), f"{point}: the error must say it may have run: {result}"
    else:
        assert runs == "1" and result.stdout == "done\n" and result.exit_code == 0, (point, runs, result)
    assert (await ctx.sh("echo back")).stdout == "back\n"


@suite.check(PROCESSES)
async def background_process_lifecycle(ctx: Context) -> None:
    p = ctx.provider
    info = await p.processes.start(
        ctx.instance_id, "echo out; echo err >&2; sleep 0.3; exit 5", env={"A": "1"}
    )
    assert info.running
    done = await p.processes.wait(ctx.instance_id, info.process_id, timeout=30)
    assert done.state == "exited" and done.exit_code == 5, done
    assert await p.processes.output(ctx.instance_id, info.process_id) == b"out\n"
    assert await p.processes.output(ctx.instance_id, info.process_id, stream="stderr", offset=1) == b"rr\n"
    # unique sleep lengths, to find our processes among others (a local instance sees the host's)
    token = f"300.{uuid.uuid4().int % 10**9}"
    tree = await p.processes.start(
        ctx.instance_id, f"sleep {token}1 & setsid sleep {token}2 & sleep {token}3"
    )
    await anyio.sleep(0.3)
    await p.processes.kill(ctx.instance_id, tree.process_id)
    killed = await p.processes.wait(ctx.instance_id, tree.process_id, timeout=10)
    assert not killed.running, killed
    await anyio.sleep(0.2)
    # -a and ".": a cmdline's arguments are NUL-separated (see timeout_kills_process_tree)
    left = await ctx.sh(f"grep -al 'sleep.{token}' /proc/[0-9]*/cmdline 2>/dev/null | grep -v self || true")
    assert not [line for line in left.stdout.split() if "/proc/" in line and _alive(line, token)], left.stdout


def _alive(cmdline_path: str, token: str) -> bool:
    try:
        with open(cmdline_path, "rb") as f:
            return f"sleep\x00{token}".encode() in f.read()
    except OSError:
        return False


@suite.check(PROCESSES)
async def background_process_found_from_another_process(ctx: Context) -> None:
    info = await ctx.provider.processes.start(ctx.instance_id, "echo from-afar")
    await ctx.provider.processes.wait(ctx.instance_id, info.process_id, timeout=30)
    output = await ctx.in_child(
        f"out = anyio.run(lambda: p.processes.output({ctx.instance_id!r}, {info.process_id!r}))\n"
        f"state = anyio.run(lambda: p.processes.get({ctx.instance_id!r}, {info.process_id!r}))\n"
        "print(out.decode().strip(), state.exit_code)\n"
    )
    assert output.split() == ["from-afar", "0"], output


@suite.check(SESSIONS)
async def session_keeps_state_and_survives_exit(ctx: Context) -> None:
    session = await ctx.provider.open_session(ctx.instance_id)
    other = await ctx.provider.open_session(ctx.instance_id)
    try:
        assert (await session.run("mkdir -p sub && cd sub && export V=1 && f() { echo f$1; }")).ok
        r = await session.run("pwd; echo $V; f 2")
        assert r.stdout.endswith("/sub\n1\nf2\n"), r
        assert not (await other.run("pwd")).stdout.endswith("/sub\n"), "sessions must be independent"
        assert (await session.run("exit 3")).exit_code == 3
        r = await session.run("echo ${V:-fresh}")
        assert r.stdout == "fresh\n" and r.ok, r
        quiet = await session.run("read line; echo got $line", idle_timeout=0.5)
        assert quiet.running and quiet.exit_code is None, quiet
        await session.send("typed\n")
        r = await session.read(timeout=30)
        assert r.stdout == "got typed\n" and r.exit_code == 0, r
        await session.run("export KEEP=kept; sleep 60", idle_timeout=0.3)
        r = await session.interrupt()
        assert not r.running and r.exit_code == 130, r
        kept = await session.run('echo "$KEEP"')
        assert kept.stdout == "kept\n", "an interrupt must stop the command, not end the session"
        r = await session.run("sleep 60", timeout=1)
        assert r.timed_out and not r.running, r
        assert (await session.run("echo ok")).stdout == "ok\n"
    finally:
        await session.close()
        await other.close()


@suite.check(PROCESSES, SESSIONS)
async def bound_env_reaches_commands_processes_and_sessions(ctx: Context) -> None:
    provider, iid = ctx.provider, ctx.instance_id
    await provider.processes.bind_env(iid, {"PRAISONAI_BOUND": "b 'q' $x", "PRAISONAI_OTHER": "o"})
    await provider.processes.bind_env(iid, {"PRAISONAI_BOUND": "second"})  # later bindings win, name by name
    try:
        r = await ctx.sh('echo "$PRAISONAI_BOUND/$PRAISONAI_OTHER"')
        assert r.stdout == "second/o\n", r
        session = await provider.open_session(iid)
        try:
            assert (await session.run('echo "$PRAISONAI_BOUND"')).stdout == "second\n"
        finally:
            await session.close()
        process = await provider.processes.start(iid, 'echo "$PRAISONAI_OTHER"')
        await provider.processes.wait(iid, process.process_id, timeout=10)
        assert await provider.processes.output(iid, process.process_id) == b"o\n"
    finally:
        await provider.processes.bind_env(iid, {"PRAISONAI_BOUND": "", "PRAISONAI_OTHER": ""})


# ---- shell sessions: framing, queueing, rejected input (issue 11: 6, 7, 8) -------------------

#: Commands that print everything a command can see of its own shell: none may end a call.
_SHELL_DUMPS = (
    "set",
    "env",
    "export -p",
    "cat /proc/$$/cmdline /proc/$$/environ",
    "for p in /proc/[0-9]*; do cat $p/cmdline $p/environ; done 2>/dev/null",
    'printf "%s\\n" "$__p_n" "$__p_k" "$__p_line"',  # the names framing used to live in
    "ls -l /proc/$$/fd /proc/self/fd",
)


@suite.check(SESSIONS)
async def session_framing_cannot_be_forged_by_output(ctx: Context) -> None:
    session = await ctx.provider.open_session(ctx.instance_id)
    try:
        await session.run("export KEEP=kept")
        for dump in _SHELL_DUMPS:
            r = await session.run(f"{dump}; echo end-of-dump; echo err-end >&2")
            assert r.exit_code == 0 and r.stdout.endswith("end-of-dump\n"), (dump, r.stdout[-300:])
            assert r.stderr.endswith("err-end\n"), (dump, r.stderr[-300:])
            after = await session.run('echo "next $KEEP"')
            assert (after.stdout, after.stderr, after.exit_code) == ("next kept\n", "", 0), (dump, after)
        assert session.restarts == 0, "a dump must not end the shell"
    finally:
        await session.close()


@suite.check(SESSIONS)
async def session_control_words_in_a_command_do_not_break_framing(ctx: Context) -> None:
    session = await ctx.provider.open_session(ctx.instance_id)
    try:
        own_builtins = "printf() { echo hijack; }; read() { return 1; }; unset -f __p_cmd"
        controls = (("return 4", 4), ("break", 0), ("continue", 0), ("exec 9>&-", 0), (own_builtins, 0))
        for command, code in (*controls, ("set -e", 0), ("false", 1)):  # set -e: false ends the shell
            r = await session.run(command, timeout=30)
            assert not r.timed_out and r.exit_code == code, (command, r)
            assert (await session.run("echo ok")).stdout == "ok\n", command
        r = await session.run("exec >/dev/null 2>&1; echo hidden")
        assert r.ok and r.stdout == "", r  # the output is gone, as in a terminal; its end is not
        assert (await session.run("exit 3")).exit_code == 3
    finally:
        await session.close()


@suite.check(SESSIONS)
async def session_calls_queue_and_each_gets_its_own_output(ctx: Context) -> None:
    session = await ctx.provider.open_session(ctx.instance_id)
    results: dict[int, SessionResult] = {}

    async def one(i: int) -> None:
        results[i] = await session.run(f"echo out-{i}; sleep 0.05; echo err-{i} >&2; exit {i}", timeout=60)

    try:
        await session.run("true")  # warm: a call arriving while another runs must wait its turn
        async with anyio.create_task_group() as tg:
            for i in range(8):
                tg.start_soon(one, i)
        for i, r in results.items():
            assert (r.stdout, r.stderr, r.exit_code) == (f"out-{i}\n", f"err-{i}\n", i), (i, r)
    finally:
        await session.close()


@suite.check(SESSIONS)
async def session_queued_call_waits_for_a_command_left_running(ctx: Context) -> None:
    session = await ctx.provider.open_session(ctx.instance_id)
    try:
        quiet = await session.run("read line; echo got $line", idle_timeout=0.3)
        assert quiet.running, quiet
        try:
            await session.run("touch queued-must-not-run", timeout=0.5)
            raise AssertionError("a call must not run while the shell is still busy")
        except ExecError as exc:
            assert "did not run" in str(exc), exc
        async with anyio.create_task_group() as tg:
            later: list[SessionResult] = []

            async def queued() -> None:
                later.append(await session.run("echo second", timeout=30))

            tg.start_soon(queued)
            await anyio.sleep(0.2)
            await session.send("typed\n")
            first = await session.read(timeout=30)
        assert first.stdout == "got typed\n" and first.exit_code == 0, first
        assert later[0].stdout == "second\n", later
        assert (await session.run("ls queued-must-not-run")).exit_code != 0, "the refused call ran"
    finally:
        await session.close()


@suite.check(SESSIONS)
async def session_rejected_input_leaves_the_session_as_it_was(ctx: Context) -> None:
    session = await ctx.provider.open_session(ctx.instance_id)
    try:
        await session.run("export KEEP=kept")
        for bad, kwargs in (
            ("echo a\0b", {}),
            ("echo \udcff", {}),
            ("echo t", {"timeout": -1}),
            ("echo t", {"timeout": float("nan")}),
            ("echo t", {"timeout": "5"}),
            ("echo t", {"timeout": True}),
            ("echo t", {"idle_timeout": 0}),
        ):
            try:
                await session.run(bad, **kwargs)
                raise AssertionError(f"accepted {bad!r} {kwargs}")
            except ConfigError:
                pass
            r = await session.run('echo "$KEEP"')
            assert (r.stdout, r.exit_code, session.restarts) == ("kept\n", 0, 0), (bad, kwargs, r)
    finally:
        await session.close()
