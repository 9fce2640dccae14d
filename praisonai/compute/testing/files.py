"""Conformance checks for the file API (list, exists, stat, remove, rename, mkdir): what it
reports, and that links the instance plants are reported, removed and renamed as links, never
followed, and that no file name can forge an entry. Every provider has the API (no capability).

Listed in :data:`praisonai.compute.testing.SUITES`. Each check works in a directory of its own
under the instance's working dir and removes it.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import tempfile
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

from praisonai import _transfer
from praisonai._errors import PathNotFoundError, PraisonAIError
from praisonai.compute.testing._kit import Context, Suite

suite = Suite()


@contextlib.asynccontextmanager
async def _scratch(ctx: Context) -> AsyncIterator[str]:
    where = f"files-{uuid.uuid4().hex[:8]}"
    await ctx.provider.files.mkdir(ctx.instance_id, where)
    try:
        yield where
    finally:
        with contextlib.suppress(PraisonAIError, OSError):
            await ctx.provider.files.remove(ctx.instance_id, where)


@suite.check()
async def files_list_and_stat_report_entries(ctx: Context) -> None:
    p, i = ctx.provider, ctx.instance_id
    async with _scratch(ctx) as d:
        await p.write_file(i, f"{d}/a.txt", b"hello")
        await p.files.mkdir(i, f"{d}/sub/deep")
        await p.write_file(i, f"{d}/sub/deep/b", b"")
        names = {(e.path, e.type) for e in await p.files.list(i, d)}
        assert names == {(f"{d}/a.txt", "file"), (f"{d}/sub", "dir")}, names
        deep = {e.path for e in await p.files.list(i, d, depth=3)}
        assert f"{d}/sub/deep/b" in deep and len(deep) == 4, deep
        info = await p.files.stat(i, f"{d}/a.txt")
        assert (info.name, info.type, info.size) == ("a.txt", "file", 5) and info.mtime > 0, info
        assert await p.files.exists(i, f"{d}/a.txt") and not await p.files.exists(i, f"{d}/nope")


@suite.check()
async def files_names_cannot_forge_entries(ctx: Context) -> None:
    p, i = ctx.provider, ctx.instance_id
    async with _scratch(ctx) as d:
        tricky = "x\nl\t0\t644 1.0 passwd\n."  # what a line-framed listing would read as fields
        r = await ctx.sh(f"touch -- {shlex.quote(f'{d}/{tricky}')}")  # planted by the instance
        assert r.ok, r
        entries = await p.files.list(i, d)
        assert [e.name for e in entries] == [tricky], entries


@suite.check()
async def files_links_are_never_followed(ctx: Context) -> None:
    p, i = ctx.provider, ctx.instance_id
    async with _scratch(ctx) as d:
        await p.files.mkdir(i, f"{d}/real")
        await p.write_file(i, f"{d}/real/keep", b"k")
        r = await ctx.sh(f"ln -s real {d}/link && ln -s /etc {d}/etc")
        assert r.ok, r
        link = await p.files.stat(i, f"{d}/link")
        assert (link.type, link.symlink_target) == ("symlink", "real"), link
        await p.files.remove(i, f"{d}/link")
        assert await p.files.exists(i, f"{d}/real/keep"), "removing a link removed its target's files"
        try:
            await p.files.list(i, f"{d}/etc")
        except (NotADirectoryError, PermissionError):
            pass
        else:
            raise AssertionError("list entered a link to /etc")
        await p.write_file(i, f"{d}/f", b"f")
        await p.files.rename(i, f"{d}/f", f"{d}/etc")  # replaces the link, never moves into /etc
        assert (await p.files.stat(i, f"{d}/etc")).type == "file"


@suite.check()
async def files_remove_rename_mkdir(ctx: Context) -> None:
    p, i = ctx.provider, ctx.instance_id
    async with _scratch(ctx) as d:
        await p.files.mkdir(i, f"{d}/t/u")
        await p.write_file(i, f"{d}/t/u/v", b"v")
        await p.files.rename(i, f"{d}/t", f"{d}/moved")
        assert await p.read_file(i, f"{d}/moved/u/v") == b"v"
        await p.files.remove(i, f"{d}/moved")
        assert not await p.files.exists(i, f"{d}/moved")
        for call in (p.files.stat(i, f"{d}/gone"), p.files.remove(i, f"{d}/gone")):
            try:
                await call
            except PathNotFoundError:
                continue
            raise AssertionError("a missing path must raise PathNotFoundError")
        await p.write_file(i, f"{d}/file", b"")
        try:
            await p.files.mkdir(i, f"{d}/file")
        except FileExistsError:
            return
        raise AssertionError("mkdir over a file must raise FileExistsError")


@suite.check()
async def transfers_count_their_bytes(ctx: Context) -> None:
    """An upload and a download count the bytes they move, for a progress bar to show: at least
    the file's size each way (an archive's headers add a little)."""
    data = os.urandom(3 << 20)
    counted: list[int] = []
    with tempfile.TemporaryDirectory() as here:
        source, back = Path(here, "up.bin"), Path(here, "down.bin")
        source.write_bytes(data)
        async with _scratch(ctx) as d:
            with _transfer.watching(counted.append):
                await ctx.provider.upload_file(ctx.instance_id, str(source), f"{d}/up.bin")
            up, counted[:] = sum(counted), []
            with _transfer.watching(counted.append):
                await ctx.provider.download_file(ctx.instance_id, f"{d}/up.bin", str(back))
            down = sum(counted)
        assert back.read_bytes() == data, "the file must come back intact"
    assert up >= len(data) and down >= len(data), f"counted {up} up and {down} down for {len(data)} bytes"
