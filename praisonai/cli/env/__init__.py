"""``praisonai env …``: the repository's ``.praisonai/environment.yaml`` — check it, show what it
resolves to, plan it against each provider (the plan itself: :mod:`.plan`), build its capture.

Every command takes an optional PATH: a file, or a directory to search from (default: the working
directory, up to the repository root). Nothing here prints an env value or the capture key.
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from praisonai import _portal
from praisonai._errors import ConfigError, EnvironmentFileError
from praisonai._limits import DEFAULT_CAPTURE_PRUNE_DAYS
from praisonai._times import duration
from praisonai._types import Capability, CaptureInfo
from praisonai.cli import _output
from praisonai.cli._help import PlainCommand
from praisonai.cli._options import AllowHostMountsOpt, JsonOpt
from praisonai.cli.env.plan import plan_flavour, plan_provider
from praisonai.compute.base import ComputeProvider
from praisonai.compute.config import ComputeConfig
from praisonai.compute.registry import DEFAULT_ORDER, available_providers, resolve_compute
from praisonai.sandbox import AsyncSandbox, provisioning
from praisonai.sandbox.environment import (
    ENVIRONMENT_FILE,
    EffectiveConfig,
    effective_config,
    find_environment_file,
    shown_path,
)

app = typer.Typer(
    help="The environment definition: .praisonai/environment.yaml.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

PathArg = Annotated[
    Path | None,
    typer.Argument(
        metavar="[PATH]",
        help="The file, or a directory to search from (default: here, up to the repo root).",
        show_default=False,
    ),
]
MASK = "***"


@app.command("validate", cls=PlainCommand)
def validate(
    path: PathArg = None, allow_host_mounts: AllowHostMountsOpt = False, json_: JsonOpt = False
) -> None:
    """Check the file: 'ok' and its definition hash, or every problem with its line (exit 2).
    With --json: {"ok", "source", "definition_hash", "problems"}, also when it is not valid."""
    located = _locate(path)
    try:
        effective = effective_config(_allowing(allow_host_mounts), path=located)
    except EnvironmentFileError as exc:
        if not json_:
            raise
        shown = shown_path(Path(exc.path))
        _output.print_json(
            {"ok": False, "source": shown, "definition_hash": None, "problems": list(exc.problems)}
        )
        raise typer.Exit(2) from None
    assert effective.source is not None  # a path was given, so it was read
    if json_:
        _output.print_json({"ok": True, **_header(effective), "problems": []})
        return
    print(
        _output.safe(f"ok: {shown_path(effective.source)} (definition {effective.config.definition_hash()})")
    )


@app.command("show", cls=PlainCommand)
def show(path: PathArg = None, json_: JsonOpt = False, allow_host_mounts: AllowHostMountsOpt = False) -> None:
    """The effective definition (the file over the defaults), env values masked."""
    effective = effective_config(_allowing(allow_host_mounts), path=_locate(path, required=False))
    from_file = set(effective.definition.config_fields()) if effective.definition else set()
    fields = _shown_fields(effective.config)
    if json_:
        _output.print_json({**_header(effective), "config": fields, "from_file": sorted(from_file)})
        return
    for key, value in _header(effective).items():
        print(_output.safe(f"{key}: {value if value is not None else '-'}"))  # a repository's file says
    origin = {name: "file" if name in from_file else "default" for name in fields}
    _output.table(("field", "value", "from"), [(k, _text(v), origin[k]) for k, v in fields.items()])


@app.command("plan", cls=PlainCommand)
def plan(
    path: PathArg = None,
    compute: Annotated[
        list[str] | None,
        typer.Option("--compute", "-c", metavar="NAME", help="Provider, repeatable (default: every one)."),
    ] = None,
    json_: JsonOpt = False,
    allow_host_mounts: AllowHostMountsOpt = False,
) -> None:
    """How each provider honours each field the file uses: native, emulated or unsupported."""
    effective = effective_config(_allowing(allow_host_mounts), path=_locate(path))
    assert effective.definition is not None
    plans = [plan_provider(name, effective.definition) for name in compute or available_providers()]
    if not compute:  # also each flavour the default may choose, with what it declares (bubblewrap)
        plans += [plan_flavour(c, effective.definition) for c in DEFAULT_ORDER if not isinstance(c, str)]
        plans.sort(key=lambda p: p.provider)
    if json_:
        _output.print_json({**_header(effective), "providers": [p.as_json() for p in plans]})
        return
    rows = [(p.provider, s.field, s.level, s.why) for p in plans for s in p.fields]
    _output.table(("provider", "field", "support", "why"), rows)
    for p in plans:
        print(f"{p.provider}: {p.verdict}")


# ---- shared --------------------------------------------------------------------------------------


def _locate(path: Path | None, *, required: bool = True) -> Path | None:
    """PATH when it is a file; else the file found from PATH (a directory) or the working directory.

    Raises:
        ConfigError: ``required`` and there is no file.
    """
    if path is not None and not path.is_dir():
        return path
    found = find_environment_file(path)
    if found is None and required:
        where = shown_path(path) if path is not None else "the working directory"
        raise ConfigError(f"no {ENVIRONMENT_FILE} in {where} or its parents up to the repository root")
    return found


def _header(effective: EffectiveConfig) -> dict[str, Any]:
    return {
        "source": shown_path(effective.source) if effective.source else None,
        "backend": effective.backend,
        "definition_hash": effective.config.definition_hash(),
    }


def _shown_fields(config: ComputeConfig) -> dict[str, Any]:
    """The config as JSON-able values, env values masked; labels and metadata are not the file's."""
    fields = config.model_dump(mode="json", exclude={"labels", "metadata"})
    fields["env"] = dict.fromkeys(config.env, MASK)
    return fields


def _text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "-"
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_text(v)}" for k, v in value.items()) or "-"
    return str(value)


# ---- captures: `env build` and `env captures` --------------------------------------------------

ComputeOpt = Annotated[
    str | None,
    typer.Option(
        "--compute", "-c", metavar="NAME", help="Provider (default: the file's backend, else the default)."
    ),
]


@app.command("build", cls=PlainCommand)
def build(
    path: PathArg = None,
    compute: ComputeOpt = None,
    allow_host_mounts: AllowHostMountsOpt = False,
    json_: JsonOpt = False,
) -> None:
    """Provision the definition once so that its capture exists: later starts skip packages and
    setup and run only refresh. Nothing to do when the capture is there already. With --json:
    {"provider", "definition_hash", "capture", "built", "duration_s"} ("capture" null when the
    definition has nothing to capture)."""
    chosen = provisioning.plan(compute or None, _allowing(allow_host_mounts), environment=_locate(path))
    provider, config, definition = chosen.provider, chosen.config, chosen.config.definition_hash()
    if Capability.CAPTURE not in provider.capabilities:
        raise ConfigError(
            f"the {provider.provider_name} provider cannot capture instances; try --compute docker"
        )

    def built(capture: str | None, took: float | None, line: str) -> None:
        if json_:
            head = {"provider": provider.provider_name, "definition_hash": definition, "capture": capture}
            _output.print_json({**head, "built": took is not None, "duration_s": took})
        else:
            print(line)

    if not (config.packages or config.setup):
        built(None, None, f"nothing to capture: definition {definition} has no packages or setup")
        return
    if not config.capture:
        raise ConfigError("the definition says capture: false")
    tag = config.capture_tag()
    if tag in [c.name for c in _captures(provider)]:
        built(tag, None, f"up to date: capture {tag} of definition {definition}")
        return
    started = time.monotonic()
    with _output.progress(f"building capture {tag}: packages and setup"):
        sandbox = _portal.call(lambda: AsyncSandbox.from_plan(chosen, claim=False))  # build, never claim
        _portal.call(sandbox.close)
    took = round(time.monotonic() - started, 3)
    built(tag, took, f"captured {tag} for definition {definition} in {took:.1f}s")


@app.command("captures", cls=PlainCommand)
def captures(
    compute: ComputeOpt = None,
    prune: Annotated[
        bool, typer.Option("--prune", help="Remove old captures (see --older-than, --keep).")
    ] = False,
    older_than: Annotated[
        float | None,
        typer.Option(
            "--older-than",
            metavar="NUMBER",
            help=f"Days unused before --prune removes one (default {DEFAULT_CAPTURE_PRUNE_DAYS:g}).",
        ),
    ] = None,
    keep: Annotated[
        int | None,
        typer.Option("--keep", metavar="INTEGER", help="With --prune: keep the N most recently used."),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="With --prune: only say what would go.")] = False,
    json_: JsonOpt = False,
) -> None:
    """List this home's captures (most recently used first), or prune them by age or count."""
    if older_than is not None and not (math.isfinite(older_than) and older_than >= 0):
        raise ConfigError(f"--older-than must be a number of days >= 0, not {older_than}", op="prune")
    if keep is not None and keep < 0:
        raise ConfigError(f"--keep must be a count >= 0, not {keep}", op="prune")
    provider = resolve_compute(compute or "docker")
    if prune:
        days = DEFAULT_CAPTURE_PRUNE_DAYS if older_than is None and keep is None else older_than
        seconds = None if days is None else days * 86400
        capturer = provider.capturer  # none: nothing was captured, nothing to prune
        removed = (
            []
            if capturer is None
            else _portal.call(lambda: capturer.prune(older_than_s=seconds, keep=keep, dry_run=dry_run))
        )
        verb = "would remove" if dry_run else "removed"
        for capture in removed:
            print(_output.safe(f"{verb} {capture.name} (definition {capture.definition})"))  # image labels
        print(f"{len(removed)} {'would go' if dry_run else 'removed'}")
        return
    found = _captures(provider)
    if json_:
        _output.print_json({"captures": [dataclasses.asdict(c) for c in found]})
        return
    now = time.time()
    rows = [
        (
            c.name,
            c.definition,
            f"{c.size_bytes / 2**20:.0f} MiB",
            f"{duration(now - c.created_at)} ago",
            f"{duration(now - c.last_used)} ago",
        )
        for c in found
    ]
    _output.table(("capture", "definition", "size", "created", "last used"), rows)


def _allowing(allow_host_mounts: bool) -> dict[str, bool] | None:
    """The explicit config of ``--allow-host-mounts``: only when given, so nothing else changes."""
    return {"allow_host_mounts": True} if allow_host_mounts else None


def _captures(provider: ComputeProvider) -> list[CaptureInfo]:
    """The provider's captures, most recently used first (none when it cannot capture)."""
    capturer = provider.capturer
    return [] if capturer is None else _portal.call(capturer.captures)
