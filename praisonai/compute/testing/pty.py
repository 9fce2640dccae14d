"""Conformance checks for ``Capability.PTY``: a terminal's output, size, exit code and close."""

from __future__ import annotations

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
async def pty_close_kills_its_tree(ctx: Context) -> None:
    """Close kills what the terminal started, also a child that left its session."""
    marker = "7391"
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
