"""Arguments and options several command groups take, declared once (typer only: cheap to import)."""

from __future__ import annotations

from typing import Annotated

import typer

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]
InstanceIdsArg = Annotated[
    list[str] | None,
    typer.Argument(help="Instances to stop.", metavar="[INSTANCE_ID]...", show_default=False),
]
AllOpt = Annotated[bool, typer.Option("--all", help="Stop every instance `ps` shows.")]
