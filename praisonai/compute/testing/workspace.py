"""The workspace (``praisonai.compute.workspace``) on every provider: a local tree uploaded with
``.gitignore`` honoured and links sent as links, the baseline's diff of an edit, and a clone of a
repository by path at a ref. Each check works in a directory of its own below the working dir."""

from __future__ import annotations

import subprocess
import tempfile
import uuid
from pathlib import Path

from praisonai.compute.testing._kit import Context, Suite
from praisonai.compute.workspace import Place, clone, diff, parse_repo, upload_tree

suite = Suite()
_GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]


def _at(ctx: Context) -> Place:
    return Place(ctx.provider, ctx.instance_id)


@suite.check()
async def workspace_upload_honours_gitignore_and_keeps_links(ctx: Context) -> None:
    where = f"ws-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory() as scratch:
        tree = Path(scratch)
        (tree / ".gitignore").write_text("*.log\n")
        (tree / "a.txt").write_text("a\n")
        (tree / "noise.log").write_text("ignored")
        (tree / "out").symlink_to("/etc/hostname")
        await upload_tree(_at(ctx), tree, where)
    listed = await ctx.sh(f"cd {where} && ls -A && readlink out && cat a.txt")
    assert listed.stdout.split() == [
        ".gitignore",
        ".praisonai-baseline.git",
        "a.txt",
        "out",
        "/etc/hostname",
        "a",
    ], listed
    await ctx.sh(f"rm -rf {where}")


@suite.check()
async def workspace_diff_shows_an_edit(ctx: Context) -> None:
    where = f"ws-{uuid.uuid4().hex[:8]}"
    at = _at(ctx)
    with tempfile.TemporaryDirectory() as scratch:
        (Path(scratch) / "f.txt").write_text("before\n")
        await upload_tree(at, scratch, where)
    assert await diff(at, where) == ""
    await ctx.provider.write_file(ctx.instance_id, f"{where}/f.txt", b"after\n")
    patch = await diff(at, where)
    assert "-before\n+after\n" in patch, patch
    await ctx.sh(f"rm -rf {where}")


@suite.check()
async def workspace_clones_a_ref(ctx: Context) -> None:
    where, bundle = f"ws-{uuid.uuid4().hex[:8]}", f"repo-{uuid.uuid4().hex[:8]}.bundle"  # one file
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch, "work")
        subprocess.run([*_GIT, "init", "-q", str(work)], check=True)
        for name, tag in (("one", "v1"), ("two", None)):
            (work / name).write_text(f"{name}\n")
            subprocess.run([*_GIT, "-C", str(work), "add", name], check=True)
            subprocess.run([*_GIT, "-C", str(work), "commit", "-qm", name], check=True)
            if tag:
                subprocess.run([*_GIT, "-C", str(work), "tag", tag], check=True)
        subprocess.run([*_GIT, "-C", str(work), "bundle", "create", "-q", "../b", "--all"], check=True)
        await ctx.provider.upload_file(ctx.instance_id, Path(scratch, "b"), bundle)
    home = (await ctx.sh("pwd")).stdout.strip()
    await clone(_at(ctx), parse_repo(f"{home}/{bundle}@v1"), where)
    # the shell's glob, not ls: coreutils' statx fails with EINVAL under older gVisor releases
    listed = await ctx.sh(f"cd {where} && printf '%s\\n' *")
    assert listed.stdout.split() == ["one"], listed
    await ctx.sh(f"rm -rf {where} {bundle}")
