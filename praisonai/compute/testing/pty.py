"""Conformance checks for ``Capability.PTY``: a terminal's output, size, exit code and close; it
runs as the instance's commands do (user, working dir, bound env), the caller's env on no command
line; a resize signals the program; no command is an interactive shell."""

from __future__ import annotations

import uuid

import anyio

from praisonai._types import Capability
from praisonai.compute.abilities.pty import Pty
from praisonai.compute.testing._kit import Context, Suite

suite = Suite()
PTY = Capability.PTY
_WAIT_S = 60  # what a check waits for a terminal's answer before it fails


async def read_until(pty: Pty, wanted: bytes) -> bytes:
    """The terminal's output up to and including ``wanted``; fails when it ends or stalls first
    (after a minute). Also for providers' own terminal tests."""
    seen = b""
    with anyio.fail_after(_WAIT_S):
        while wanted not in seen:
            chunk = await pty.read()
            assert chunk, f"the terminal ended before printing {wanted!r}; it printed {seen!r}"
            seen += chunk
    return seen


async def read_all(pty: Pty) -> bytes:
    """Everything the terminal prints until it ends (failing after a minute). Also for
    providers' own terminal tests."""
    seen = b""
    with anyio.fail_after(_WAIT_S):
        async for chunk in pty:
            seen += chunk
    return seen


@suite.check(PTY)
async def pty_echo_and_exit_code(ctx: Context) -> None:
    """A command's output comes through the terminal (a tty: CRLF), and its exit code back."""
    async with await ctx.provider.open_pty(ctx.instance_id, command="echo pty-$((6*7)); exit 3") as pty:
        assert b"pty-42\r\n" in await read_until(pty, b"pty-42")
        with anyio.fail_after(_WAIT_S):
            assert await pty.wait() == 3


@suite.check(PTY)
async def pty_size_and_resize(ctx: Context) -> None:
    """The program sees the size asked for, and the new one after ``resize``."""
    async with await ctx.provider.open_pty(ctx.instance_id, command=["/bin/sh"], cols=91, rows=17) as pty:
        await pty.write(b"stty size; echo size-$((1+1))\n")
        assert b"17 91" in await read_until(pty, b"size-2")
        await pty.resize(103, 29)
        await pty.write(b"stty size; echo size-$((2+1))\n")
        assert b"29 103" in await read_until(pty, b"size-3")


@suite.check(PTY)
async def pty_runs_as_the_instances_commands_do(ctx: Context) -> None:
    """In the working dir as the commands' user, with the caller's env, which is on no process's
    command line; the program's exit code comes back."""
    expected = (await ctx.sh("id -u; pwd")).stdout.replace("\n", "|")
    script = (
        'printf "<%s|%s|%s|" "$MINE" "$(id -u)" "$(pwd)"; '
        # the value on no process's command line: the pattern does not match itself
        "n=$(cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' | grep -c 'xyzzy-4[2]'); "
        'printf "%s>" "$n"; exit 5'
    )
    env = {"MINE": "xyzzy-42 x"}
    async with await ctx.provider.open_pty(ctx.instance_id, command=script, env=env) as pty:
        seen = await read_until(pty, b">")
        with anyio.fail_after(_WAIT_S):
            assert await pty.wait() == 5
    assert f"<xyzzy-42 x|{expected}0>".encode() in seen, seen


@suite.check(PTY)
async def pty_cwd_is_relative_to_the_working_dir(ctx: Context) -> None:
    """A relative ``cwd`` is where a command given it runs."""
    await ctx.sh("mkdir -p pty-sub")
    expected = (await ctx.sh("pwd", cwd="pty-sub")).stdout.strip()
    async with await ctx.provider.open_pty(ctx.instance_id, command='echo "[$(pwd)]"', cwd="pty-sub") as pty:
        assert f"[{expected}]".encode() in await read_all(pty)


@suite.check(PTY, Capability.PROCESSES, Capability.SESSIONS)  # as bound_env's other check
async def bound_env_reaches_terminals(ctx: Context) -> None:
    """A terminal gets the env bound to the instance, the caller's own winning name by name."""
    provider, iid = ctx.provider, ctx.instance_id
    await provider.processes.bind_env(iid, {"PTY_BOUND": "bound", "PTY_BOTH": "bound"})
    try:
        line = 'echo "[$PTY_BOUND $PTY_BOTH]"'
        async with await provider.open_pty(iid, command=line, env={"PTY_BOTH": "call"}) as pty:
            assert b"[bound call]" in await read_all(pty)
    finally:
        await provider.processes.bind_env(iid, {"PTY_BOUND": "", "PTY_BOTH": ""})


@suite.check(PTY)
async def pty_without_a_command_is_an_interactive_shell(ctx: Context) -> None:
    """No command: a shell in the working dir, reading what is typed; its exit code comes back."""
    workdir = (await ctx.sh("pwd")).stdout.strip()
    async with await ctx.provider.open_pty(ctx.instance_id) as pty:
        await pty.write(b'echo "[$(pwd) $((40+2))]"\n')  # the echoed line does not hold "42]"
        assert f"[{workdir} 42]".encode() in await read_until(pty, b"42]")
        await pty.write(b"exit 4\n")
        with anyio.fail_after(_WAIT_S):
            assert await pty.wait() == 4


@suite.check(PTY)
async def pty_resize_signals_the_program(ctx: Context) -> None:
    """A resize reaches the program as SIGWINCH, as on a terminal of this machine."""
    script = "trap 'echo winch-$(stty size)' WINCH; echo ready; while :; do sleep 0.1; done"
    async with await ctx.provider.open_pty(ctx.instance_id, command=script, cols=50, rows=10) as pty:
        await read_until(pty, b"ready")
        await pty.resize(120, 33)
        assert b"winch-33 120" in await read_until(pty, b"winch-33 120")


@suite.check(PTY)
async def pty_a_signal_is_128_plus_its_number(ctx: Context) -> None:
    """A program killed by signal N ends the terminal with 128+N."""
    async with await ctx.provider.open_pty(ctx.instance_id, command="kill -9 $$") as pty:
        with anyio.fail_after(_WAIT_S):
            assert await pty.wait() == 137


@suite.check(PTY)
async def pty_a_program_that_cannot_run_ends_it(ctx: Context) -> None:
    """A program that is not there ends the terminal with 127, leaving no shell in its place."""
    async with await ctx.provider.open_pty(ctx.instance_id, command=["/no/such/program"]) as pty:
        await read_all(pty)
        assert await pty.wait() == 127


@suite.check(PTY)
async def pty_after_its_end_is_quiet_and_closes_once(ctx: Context) -> None:
    """An ended terminal ignores input and a new size; close is idempotent, then reads end."""
    pty = await ctx.provider.open_pty(ctx.instance_id, command=["true"])
    assert await read_all(pty) == b""
    await pty.write(b"ignored\n")
    await pty.resize(100, 30)
    await pty.close()
    await pty.close()
    assert await pty.read() == b""
    with anyio.fail_after(_WAIT_S):
        assert await pty.wait() == 0


@suite.check(PTY)
async def pty_close_of_an_unread_terminal(ctx: Context) -> None:
    """A terminal whose output nobody reads still closes: its program is killed and nothing it
    ran is left; ``wait`` then says so (137), or -1 when the end came after the close. (A close
    that waited for the output to be read hung for good: no timing here, only an end.)"""
    unread = f"praisonai-unread-{uuid.uuid4().hex[:8]}"  # a local instance sees every host process
    pty = await ctx.provider.open_pty(ctx.instance_id, command=["yes", unread])
    await pty.read()
    await anyio.sleep(1)  # the output backs up: the stream, then the program, wait
    with anyio.fail_after(_WAIT_S):
        await pty.close()
    with anyio.fail_after(_WAIT_S):
        assert await pty.wait() in (137, -1)
    left = await ctx.sh(f"ps -eo args 2>/dev/null | grep '^yes {unread}' || true")
    assert left.stdout == "", f"close left processes behind: {left.stdout!r}"


@suite.check(PTY)
async def pty_close_kills_its_tree(ctx: Context) -> None:
    """Close kills what the terminal started, also a child that left its session."""
    marker = str(uuid.uuid4().int % 10**9)  # ours alone: a local instance sees every host process
    async with await ctx.provider.open_pty(ctx.instance_id, command=["/bin/sh"]) as pty:
        await pty.write(f"sleep {marker}1 & (setsid sleep {marker}2 &) ; echo started-$((2*2))\n".encode())
        await read_until(pty, b"started-4")
    found = await ctx.sh(f"ps -eo args 2>/dev/null | grep '^sleep {marker}' || true")
    assert found.stdout == "", f"close left processes behind: {found.stdout!r}"


@suite.check(PTY)
async def pty_refuses_a_bad_size(ctx: Context) -> None:
    """A size out of range is refused in one sentence before anything starts."""
    from praisonai._errors import ConfigError

    try:
        await ctx.provider.open_pty(ctx.instance_id, cols=0)
    except ConfigError as exc:
        assert "cols" in str(exc)
    else:
        raise AssertionError("cols=0 was accepted")
