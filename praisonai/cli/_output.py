"""All CLI output goes through here: tables (or JSON) on stdout, one-line errors on stderr."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

_err = Console(stderr=True, highlight=False)


def error(message: str) -> None:
    """One red line on stderr; no traceback (set PRAISONAI_DEBUG=1 to see one)."""
    # Escaped: messages quote user text ("name[extra]", "{allow: [hosts]}") that is not markup.
    _err.print(f"[bold red]error:[/] {escape(message)}", markup=True, soft_wrap=True)


def note(message: str) -> None:
    _err.print(f"[dim]{escape(message)}[/]", markup=True, soft_wrap=True)


def table(columns: Sequence[str], rows: Sequence[Sequence[Any]], *, as_json: bool = False) -> None:
    if as_json:
        sys.stdout.write(json.dumps([dict(zip(columns, row)) for row in rows], indent=2) + "\n")
        return
    view = Table(*columns, box=None, pad_edge=False, header_style="bold")
    for row in rows:
        view.add_row(*(escape(str(cell)) for cell in row))  # cells are data, not markup
    Console(soft_wrap=True).print(view)
