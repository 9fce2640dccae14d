"""Arguments and options several command groups take, declared once (typer only: cheap to import)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from praisonai._errors import ConfigError

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="Print the ids only, one per line.")]
InstanceIdsArg = Annotated[
    list[str] | None,
    typer.Argument(help="Instances to stop.", metavar="[INSTANCE_ID]...", show_default=False),
]
AllowHostMountsOpt = Annotated[
    bool,
    typer.Option(
        "--allow-host-mounts",
        help="Allow mounts of the engine's socket, /, host system directories and other homes "
        "(refused by default, also when the environment file asks for them).",
    ),
]
EnvironmentOpt = Annotated[
    Path | None,
    typer.Option(
        "--environment",
        metavar="FILE",
        help="Environment file (default: .praisonai/environment.yaml, searched up to the repo root).",
    ),
]
AllOpt = Annotated[bool, typer.Option("--all", help="Stop every instance `ps` shows.")]
AgentArg = Annotated[
    str | None,
    typer.Argument(
        metavar="[AGENT]",
        help="Only this agent's sessions (a name or id, as --agent; PraisonAI's spelling).",
        show_default=False,
    ),
]


def one_of(positional: str | None, option_name: str, option: str | None, *, command: str) -> str | None:
    """The value given as ``command``'s argument or as its option ``option_name`` (PraisonAI
    writes some options as arguments: ``sessions list AGENT``); both only when they agree.

    Raises:
        ConfigError: both given, and they differ (one sentence naming both).
    """
    if positional is not None and option is not None and positional != option:
        raise ConfigError(
            f"{command} got {positional!r} as its argument and {option_name} {option!r}; give one of them"
        )
    return option if positional is None else positional
