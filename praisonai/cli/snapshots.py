"""``praisonai compute snapshots [rm SNAPSHOT...]``: the home's snapshots (``sandbox snapshot``,
``sandbox fork``), listed and removed by any process; ``compute gc`` removes the expired ones.

Every field of a row is printed through ``_output.safe``: a row comes from the ledger, which any
process of the home writes, and a vendor's snapshot may carry names its API gave.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Annotated

import typer

from praisonai import _times
from praisonai._times import duration
from praisonai.cli import _output
from praisonai.cli._help import PlainCommand
from praisonai.cli._options import JsonOpt
from praisonai.compute.snapshots import SnapshotGc, SnapshotInfo

app = typer.Typer(invoke_without_command=True, rich_markup_mode=None)  # help: the callback's


@app.callback(invoke_without_command=True)
def snapshots(ctx: typer.Context, json: JsonOpt = False) -> None:
    """List this home's snapshots, oldest first; `rm` removes them.

    Each row: its id, name, provider, the instance it was taken from, its age and its size on its
    provider (? when the provider cannot say). `compute gc` removes the expired ones.
    """
    if ctx.invoked_subcommand is not None:
        return
    from praisonai.compute.snapshots import list_snapshots

    found = list_snapshots()
    if json:
        _output.print_json([dataclasses.asdict(s) for s in found])
        return
    now = time.time()
    rows = [(s.id, s.name, s.provider, s.source, duration(now - s.created_at), size(s)) for s in found]
    _output.table(("snapshot", "name", "provider", "source", "age", "size"), rows)


@app.command("rm", cls=PlainCommand)
def rm(
    refs: Annotated[
        list[str],
        typer.Argument(
            metavar="SNAPSHOT...", help="Ids or names (see `compute snapshots`).", show_default=False
        ),
    ],
) -> None:
    """Remove snapshots from their providers and the home; print each one removed. Every one is
    looked up first: an unknown one is refused and nothing is removed.

    Exits 1 when one could not be removed (an instance still starts from it: docker keeps a
    snapshot while a container of it exists; remove those instances first).
    """
    from praisonai import _portal
    from praisonai.compute import snapshots as library

    found = [library.find(ref, op="remove_snapshot") for ref in dict.fromkeys(refs)]
    failed = 0
    for snapshot in found:
        try:
            held = _portal.call(library.remove, snapshot)
        except Exception as exc:  # one sentence per snapshot; the others still go
            _output.error(f"could not remove {snapshot.id}: {exc}")
            failed += 1
            continue
        gone = "removed" if held else "forgot (its provider held it no more)"
        typer.echo(_output.safe(f"{gone} {snapshot.id}{named(snapshot)}"))
    if failed:
        raise typer.Exit(1)


def report_gc(pruned: SnapshotGc) -> None:
    """``compute gc``'s lines for the expired snapshots (a failure on stderr), then their tally;
    nothing when none expired."""
    verb = "would remove" if pruned.dry_run else "removed"
    for snapshot in pruned.removed:
        typer.echo(_output.safe(f"{verb} snapshot {snapshot.id}{named(snapshot)} ({snapshot.provider})"))
    for snapshot, why in pruned.kept:
        typer.echo(_output.safe(f"kept snapshot {snapshot.id}{named(snapshot)}, in use: {why}"))
    for snapshot, why in pruned.failed:
        _output.error(f"could not remove snapshot {snapshot.id}: {why}")
    if pruned.removed or pruned.kept or pruned.failed:
        tally = f"{len(pruned.removed)} {verb}, {len(pruned.kept)} kept in use, {len(pruned.failed)} failed"
        typer.echo(f"snapshots: {tally}")


def named(snapshot: SnapshotInfo) -> str:
    return f" ({snapshot.name})" if snapshot.name else ""


def size(snapshot: SnapshotInfo) -> str:
    """Its size in the largest binary unit that fits (``?``: its provider cannot say)."""
    return _times.size(snapshot.size_bytes)
