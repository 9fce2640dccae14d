"""``praisonai sandbox snapshot | fork | restore``: save a running instance's files, start new
instances from them, roll an instance back (the library's ``sb.snapshot``, ``sb.fork`` and
``sb.restore``; ``create --from-snapshot`` is ``instance``'s; ``compute snapshots`` lists and
removes them). Each finds its instance as ``sandbox exec`` does
(a paused one is resumed) and refuses bad input in one sentence before anything is made.
"""

from __future__ import annotations

from typing import Annotated

import typer

from praisonai._limits import FORK_MAX
from praisonai.cli import _output
from praisonai.cli._options import EnvironmentOpt
from praisonai.cli.sandbox._plan import planned
from praisonai.cli.sandbox._running import EnvOpt, Interrupted, NoEnvironmentOpt, signals_interrupt, wait
from praisonai.cli.sandbox.instance import InstanceArg, attached

SnapshotArg = Annotated[
    str,
    typer.Argument(
        metavar="SNAPSHOT", help="A snapshot's id or name (see `compute snapshots`).", show_default=False
    ),
]


def snapshot(
    instance_id: InstanceArg,
    name: Annotated[
        str | None,
        typer.Option("--name", metavar="NAME", help="A name to find it by (letters, digits, '.', '_', '-')."),
    ] = None,
) -> None:
    """Save the instance's files (its workspace and everything its commands changed) while it
    keeps running, and print the snapshot's id. No env value is in it.

    Examples:

    \b
      snap=$(praisonai sandbox snapshot "$id" --name before-upgrade)
      praisonai sandbox create --from-snapshot before-upgrade
    """
    from praisonai.compute import snapshots

    snapshots.check_name(name)  # before the instance is looked for
    sandbox = attached(instance_id, "snapshot", "snapshot")
    with _output.progress(f"snapshotting {instance_id}"):
        taken = wait(lambda: sandbox.snapshot(name))
    typer.echo(_output.safe(taken.id))


def fork(
    instance_id: InstanceArg,
    count: Annotated[
        int,
        typer.Option(
            "-n",
            "--count",
            metavar="N",
            help=f"Instances to make (1 to {FORK_MAX}; default 1).",
            show_default=False,
        ),
    ] = 1,
    env: EnvOpt = None,
    environment: EnvironmentOpt = None,
    no_environment: NoEnvironmentOpt = False,
) -> None:
    """Snapshot the instance, then make N new instances from the snapshot, concurrently, and print
    their ids, one a line; the instance keeps running. Their config (env, idle timeout, ttl) is
    what `sandbox create` would give (the environment file, --env), never the source's env. When
    one fails, or on Ctrl-C, every instance made and the snapshot are removed.

    Examples:

    \b
      for fork in $(praisonai sandbox fork "$id" -n 3); do
        praisonai sandbox exec "$fork" -- python3 try.py; done
    """
    from praisonai.compute import snapshots

    snapshots.check_fork_count(count)  # before the instance is looked for
    source = attached(instance_id, "fork", "fork")
    chosen = planned(source.provider, None, env, environment, no_environment, False)
    with signals_interrupt() as interrupted, _output.progress(f"forking {instance_id} {count} ways"):
        try:
            taken, made = wait(lambda: snapshots.fork(source.provider, source.id, count, chosen.config))
        except Interrupted:
            _output.note(f"interrupted by {interrupted.name}: what the fork made was removed")
            raise typer.Exit(128 + interrupted.number) from None
    typer.echo("".join(f"{_output.safe(info.instance_id)}\n" for info in made), nl=False)
    _output.note(
        f"from snapshot {taken.id}: `praisonai compute snapshots rm {taken.id}` once the forks are gone"
    )


def restore(instance_id: InstanceArg, snapshot: SnapshotArg) -> None:
    """Roll the instance back to SNAPSHOT under the same id: its files become the snapshot's and
    its processes end. Local can; docker cannot (it says so: `sandbox fork` or `sandbox create
    --from-snapshot` start a new instance from the snapshot instead)."""
    from praisonai.compute import snapshots

    found = snapshots.find(snapshot, op="restore")  # before the instance is looked for
    sandbox = attached(instance_id, "restore", "restore")
    with _output.progress(f"restoring {instance_id}"):
        info = wait(lambda: sandbox.restore(found))
    typer.echo(_output.safe(f"{info.instance_id}: restored to {found.id}"))
