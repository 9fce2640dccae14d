"""Arguments and options several command groups take, declared once (typer only: cheap to import)."""

from __future__ import annotations

from typing import Annotated

import typer

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]
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
AllOpt = Annotated[bool, typer.Option("--all", help="Stop every instance `ps` shows.")]
