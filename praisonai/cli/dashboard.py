"""``praisonai dashboard``: serve the local web console until Ctrl-C (see :mod:`praisonai.dashboard`)."""

from __future__ import annotations

import contextlib
import html
import importlib.util
import os
import tempfile
import webbrowser
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer

from praisonai._errors import MissingDependencyError
from praisonai.cli import _output

#: What the dashboard needs beyond the core install (its extra).
NEEDS = ("starlette", "uvicorn", "websockets", "sse_starlette")
#: The page --open shows the browser: it goes on to the address (with its token) at once.
_REDIRECT = (
    '<!DOCTYPE html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url={url}">'
    '<title>praisonai dashboard</title><a href="{url}">Open the praisonai dashboard</a>\n'
)


def command(
    port: Annotated[
        int,
        typer.Option(
            "--port",
            "-p",
            metavar="PORT",
            min=0,
            max=65535,
            show_default=False,
            help="Port (default: a free one).",
        ),
    ] = 0,
    host: Annotated[
        str,
        typer.Option(
            "--host", metavar="ADDRESS", help="Address to listen on (default: 127.0.0.1).", show_default=False
        ),
    ] = "127.0.0.1",
    expose: Annotated[
        bool,
        typer.Option(
            "--expose", help="Allow an address beyond loopback (anyone with the token gets a shell)."
        ),
    ] = False,
    open_: Annotated[bool, typer.Option("--open", help="Open the page in a browser.")] = False,
) -> None:
    """Serve a web console of instances, sessions and terminals until Ctrl-C.

    It listens on 127.0.0.1 on a free port and prints its address, which carries a one-time token
    (the page trades it for a cookie). Needs: pip install 'praisonai[dashboard]'.

    \b
      praisonai dashboard
      praisonai dashboard --port 8765 --open
    """
    missing = [name for name in NEEDS if importlib.util.find_spec(name) is None]
    if missing:
        raise MissingDependencyError(
            f"the dashboard needs {', '.join(missing)}: pip install 'praisonai[dashboard]'"
        )
    from praisonai.dashboard import Dashboard

    board = Dashboard(host, port, expose=expose)
    if board.access.hosts is None:  # beyond loopback
        _output.note(
            f"warning: listening on {host}: whoever reaches it with the token "
            "can run commands in your instances"
        )
    typer.echo(f"praisonai dashboard: {board.url}")
    typer.echo("(Ctrl-C stops it)", err=True)
    with _opened(board.url) if open_ else contextlib.nullcontext():
        board.run()


@contextlib.contextmanager
def _opened(url: str) -> Iterator[None]:
    """Open ``url`` in a browser through a file only this user can read, removed when the
    server ends. Every local user can read a browser's command line (``ps``, /proc/PID/cmdline),
    so the token never goes on it (Jupyter opens its server the same way)."""
    fd, name = tempfile.mkstemp(prefix="praisonai-dashboard-", suffix=".html")  # 0600
    try:
        with os.fdopen(fd, "w") as page:
            page.write(_REDIRECT.format(url=html.escape(url)))
        webbrowser.open(Path(name).as_uri())
        yield
    finally:
        os.unlink(name)
