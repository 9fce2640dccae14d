"""``praisonai compute …``: the providers, the instances they hold (``ps``, ``stop``, ``gc``;
``pause``/``resume`` from ``cli.pause``), the home's snapshots (``snapshots``, from
``cli.snapshots``; ``gc`` removes the expired ones) and the home's shared warm pools (``warm``).

The reconciliation of the ledger with the providers' own lists, and what ``gc`` removes, live in
:mod:`praisonai.compute.inventory`; these commands parse their arguments and print its results.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from praisonai._errors import ConfigError
from praisonai._lifetime import Lifetime
from praisonai._limits import DEFAULT_SNAPSHOT_PRUNE_DAYS
from praisonai._times import duration
from praisonai.cli import _output, logs, terminal
from praisonai.cli import pause as pause_cli
from praisonai.cli import snapshots as snapshots_cli
from praisonai.cli._help import PlainCommand
from praisonai.cli._options import AllOpt, EnvironmentOpt, InstanceIdsArg, JsonOpt, QuietOpt
from praisonai.cli.ports import port
from praisonai.compute import inventory
from praisonai.compute.inventory import GcOutcome, Instance
from praisonai.compute.registry import provider_statuses, shown_name

app = typer.Typer(help="Compute providers and their instances.", no_args_is_help=True, rich_markup_mode=None)
app.command("pause", cls=PlainCommand)(pause_cli.pause)
app.command("resume", cls=PlainCommand)(pause_cli.resume)
app.command("port", cls=PlainCommand)(port)  # praisonai/cli/ports.py
app.add_typer(snapshots_cli.app, name="snapshots")
terminal.register(app)  # shell
logs.register(app)  # logs


@app.command("providers", cls=PlainCommand)
def providers(json: JsonOpt = False) -> None:
    """List providers: installed, available now, why not, and what each can do."""
    rows = [
        (s.name, s.installed, s.available, s.reason, " ".join(s.capabilities)) for s in provider_statuses()
    ]
    _output.table(("name", "installed", "available", "why not", "capabilities"), rows, as_json=json)


@app.command("ps", cls=PlainCommand)
def ps(json: JsonOpt = False, quiet: QuietOpt = False) -> None:
    """List instances: the ledger's, checked with their providers, and every provider's own list.

    Exits 1 when a provider could not list its instances or a ledger row could not be read
    (each named on stderr; the other rows are still shown).
    """
    survey = inventory.ps()
    if quiet:  # as docker ps -q: for `xargs praisonai sandbox rm`
        typer.echo("".join(f"{_output.safe(found.instance_id)}\n" for found in survey.instances), nl=False)
    elif json:  # the library's row: the dashboard shows the same
        now = time.time()
        _output.print_json([found.as_json(now) for found in survey.instances])
    else:
        _output.table(*_ps_table(survey.instances))
    _report(survey.problems)
    if not (quiet or json):
        _snapshots_held()
    if survey.problems:
        raise typer.Exit(1)


def _snapshots_held() -> None:
    """A note that snapshots are kept, and where they are listed: they hold disk like instances."""
    from praisonai.compute.snapshots import list_snapshots

    if held := len(list_snapshots()):
        _output.note(
            f"{held} snapshot{'s' if held > 1 else ''} kept: `praisonai compute snapshots` lists them"
        )


@app.command("stop", cls=PlainCommand)
def stop(instance_ids: InstanceIdsArg = None, all_: AllOpt = False, json: JsonOpt = False) -> None:
    """Shut down instances, found in the ledger or in a provider's own list; print a tally.

    An instance whose provision never finished and whose provider does not answer has nothing
    left to stop here: its ledger row is forgotten, and said so.

    Exits 1 when an instance is unknown or could not be stopped, or a provider could not list;
    2, before anything is done, when an argument is not an instance id.
    """
    if bool(instance_ids) == all_:
        raise typer.BadParameter(
            "name the instances to stop, or give --all (not both)", param_hint="INSTANCE_ID"
        )
    outcome = inventory.stop_all() if all_ else inventory.stop(instance_ids or [])
    if json:
        _output.print_json(outcome.as_json())
        if not outcome.ok:
            raise typer.Exit(1)
        return
    _report(outcome.problems)
    for target, why in outcome.forgotten:
        _output.note(f"forgot {target.instance_id}: {why}")
    for target, error in outcome.failed:
        _output.error(f"could not stop {target.instance_id}: {error}")
    for instance_id in outcome.unknown:
        _output.error(f"no instance {instance_id!r} in the ledger or in any provider's list")
    typer.echo(f"{len(outcome.stopped)} stopped, {len(outcome.failed) + len(outcome.unknown)} failed")
    if not outcome.ok:
        raise typer.Exit(1)


@app.command("gc", cls=PlainCommand)
def gc(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print what would go; change nothing.")] = False,
    retain: Annotated[
        str | None,
        typer.Option(
            "--retain", metavar="AGE", help="Remove paused instances idle this long (90s, 30m, 12h, 7d)."
        ),
    ] = None,
    snapshots_older_than: Annotated[
        float | None,
        typer.Option(
            "--snapshots-older-than",
            metavar="DAYS",
            help=f"Remove snapshots made this many days ago (default {DEFAULT_SNAPSHOT_PRUNE_DAYS:g}, "
            "unless --snapshots-keep is given).",
        ),
    ] = None,
    snapshots_keep: Annotated[
        int | None,
        typer.Option("--snapshots-keep", metavar="N", help="Remove all snapshots but the N newest."),
    ] = None,
    json: JsonOpt = False,
) -> None:
    """Remove this home's orphans: instances whose creator is gone and that sat idle past their
    idle timeout (or ttl), paused instances idle past their retain age (--retain, else their
    own), instances labelled with this home but missing from its ledger, and ledger rows whose
    instance is gone; and its expired snapshots (older than --snapshots-older-than days, beyond
    the --snapshots-keep newest), but one an instance still starts from, which is kept (in use).
    Prints each; exits 1 when anything failed."""
    from praisonai.compute.snapshots import prune_snapshots

    if snapshots_older_than is not None and not (
        math.isfinite(snapshots_older_than) and snapshots_older_than >= 0
    ):
        raise ConfigError(f"--snapshots-older-than must be a number of days >= 0, not {snapshots_older_than}")
    if snapshots_keep is not None and snapshots_keep < 0:
        raise ConfigError(f"--snapshots-keep must be a count >= 0, not {snapshots_keep}")
    retain_s = None if retain is None else _seconds(retain)
    outcome = inventory.gc(dry_run=dry_run, retain_s=retain_s)
    older_than_s = None if snapshots_older_than is None else snapshots_older_than * 86400
    pruned = prune_snapshots(older_than_s=older_than_s, keep=snapshots_keep, dry_run=dry_run)
    failures = outcome.failures + len(pruned.failed)
    if json:
        _output.print_json({**outcome.as_json(), "snapshots": pruned.as_json(), "failures": failures})
    else:
        _report(outcome.problems)
        _gc_report(outcome)
        snapshots_cli.report_gc(pruned)
    if failures:
        raise typer.Exit(1)


@app.command("warm", cls=PlainCommand)
def warm(
    size: Annotated[
        str,
        typer.Option("--size", metavar="N", help="Instances to keep ready (1 to 1000).", show_default=False),
    ],
    environment: EnvironmentOpt = None,
    old_environment: Annotated[Path | None, typer.Option("--env", metavar="FILE", hidden=True)] = None,
    compute: Annotated[
        str | None,
        typer.Option("--compute", "-c", metavar="NAME", help="Provider (default: as sandbox run chooses)."),
    ] = None,
    json: JsonOpt = False,
) -> None:
    """Keep N instances of this definition ready for any process of this home, then exit.

    Records the pool's size and fills it to N (no daemon runs). Sandbox.create and sandbox run,
    in any process, claim one when the provider, its options and the definition match, and a
    refill starts; instances are made without env values (bound at claim) and stop at their
    idle limit or ttl like any other. compute ps shows them as warm.

    \b
      praisonai compute warm --size 4
      praisonai compute warm --size 2 --environment ci/environment.yaml -c docker
    """
    from praisonai import _portal
    from praisonai._limits import check_number
    from praisonai.compute.warm import fill
    from praisonai.sandbox.provisioning import plan

    try:
        number: object = int(size)
    except ValueError:
        number = size
    wanted = int(check_number(number, "--size", "size"))  # before anything is read or made
    option, file = _environment_file(environment, old_environment)
    if file is not None and not file.is_file():
        raise ConfigError(f"{option}: no environment file at {file}; give the path of an environment.yaml")
    chosen = plan(compute, environment=file)
    made = _portal.call(fill, chosen.provider, chosen.config, wanted)
    lifetime = chosen.config.lifetime
    if json:
        pool = {"provider": chosen.provider.provider_name, "definition_hash": chosen.config.definition_hash()}
        idle_s = lifetime.idle_timeout_s if lifetime.auto_shutdown else None
        _output.print_json(
            {**pool, "size": wanted, "made": made, "idle_timeout_s": idle_s, "ttl_s": lifetime.ttl_s}
        )
        return
    typer.echo(
        f"{chosen.provider.provider_name} pool of definition {chosen.config.definition_hash()}: "
        f"{wanted} ready ({made} made now); unclaimed instances stop {_stops(chosen.config.lifetime)}"
    )


def _environment_file(environment: Path | None, old: Path | None) -> tuple[str, Path | None]:
    """The option that named the environment file, and the file: ``--environment``, or ``--env``,
    its spelling before ``--env`` meant KEY=VALUE everywhere (kept for one release, said on stderr).

    Raises:
        ConfigError: both spellings given, or ``--env KEY=VALUE`` (warm instances hold no env values).
    """
    if old is None:
        return "--environment", environment
    if environment is not None:
        raise ConfigError("--env FILE is the old spelling of --environment FILE; give only --environment")
    if "=" in str(old) and not old.is_file():
        raise ConfigError(
            f"--env {old}: compute warm takes no KEY=VALUE (a warm instance gets its env values when it "
            "is claimed); name the environment file with --environment FILE"
        )
    _output.note("deprecated: compute warm --env FILE is now --environment FILE (--env means KEY=VALUE)")
    return "--env", old


def _stops(lifetime: Lifetime) -> str:
    if lifetime.auto_shutdown:
        return f"after {lifetime.idle_timeout_s:g}s idle"
    if lifetime.ttl_s is not None:
        return f"{lifetime.ttl_s:g}s after they start"
    return "only when stopped (no idle limit, no ttl)"


_DONE = {"remove": "removed", "forget": "forgot"}


def _gc_report(outcome: GcOutcome) -> None:
    """One line per orphan on stdout (a failure on stderr instead), then the tally, whose failed
    count adds the rows or providers that could not be checked."""
    errors = {o.instance.instance_id: why for o, why in outcome.failed}
    done = {"remove": 0, "forget": 0}
    for orphan in outcome.orphans:
        f = orphan.instance
        if f.instance_id in errors:
            _output.error(f"could not remove {f.instance_id}: {errors[f.instance_id]}")
            continue
        verb = f"would {orphan.kind}" if outcome.dry_run else _DONE[orphan.kind]
        typer.echo(
            _output.safe(f"{verb} {f.instance_id} ({f.provider_name}): {orphan.why}")
        )  # a vendor's words
        done[orphan.kind] += 1
    failed = outcome.failures
    if outcome.dry_run:
        also = f", {failed} failed" if failed else ""
        typer.echo(f"would remove {done['remove']}, would forget {done['forget']}{also}")
    else:
        typer.echo(f"{done['remove']} removed, {done['forget']} forgotten, {failed} failed")


# ---- output -------------------------------------------------------------------------------


def _ps_table(found: Sequence[Instance]) -> tuple[tuple[str, ...], list[tuple[object, ...]]]:
    """The table folds the reason into the status."""
    now = time.time()
    return ("instance", "provider", "status", "age", "owner", "endpoint"), [
        (
            f.instance_id,
            shown_name(f.provider) if f.provider else f.provider_name,
            f"{f.status}: {f.reason}" if f.reason else f.status,
            duration(now - f.created_at if f.created_at > 0 else None),
            f.owner,
            f.endpoint,
        )
        for f in found
    ]


def _seconds(age: str) -> float:
    """``90s``, ``30m``, ``12h``, ``7d`` (or plain seconds) in seconds; one sentence otherwise."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    number, unit = (age[:-1], age[-1]) if age[-1:] in units else (age, "s")
    try:
        value = float(number) * units[unit]
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise typer.BadParameter(f"{age!r} is not an age such as 90s, 30m, 12h or 7d", param_hint="--retain")
    return value


def _report(failures: Sequence[str]) -> None:
    for line in failures:
        _output.error(line)
