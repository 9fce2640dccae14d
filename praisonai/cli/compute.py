"""``praisonai compute …``: what providers exist and whether they can be used here."""

from __future__ import annotations

from typing import Annotated

import typer

from praisonai.cli import _output
from praisonai.compute.registry import provider_statuses

app = typer.Typer(help="Compute providers.", no_args_is_help=True)


@app.command("providers")
def providers(json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """List providers: installed, available now, and why not."""
    rows = [
        (s.name, "yes" if s.installed else "no", "yes" if s.available else "no", s.reason)
        for s in provider_statuses()
    ]
    _output.table(("name", "installed", "available", "why not"), rows, as_json=json)
