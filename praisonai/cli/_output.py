"""All CLI output goes through here: tables (or JSON) on stdout, one-line errors and notes, and a
progress spinner, on stderr.

Rich is imported only to draw a table or a spinner: an error or a note is one plain line (red or
dim on a terminal), so a command that prints nothing else starts without it.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Final

from praisonai._output import TERMINAL_CONTROLS

_RED, _DIM, _RESET = "\x1b[1;31m", "\x1b[2m", "\x1b[0m"

#: What stored or remote text must never send to a terminal, each shown as U+FFFD: the
#: :data:`~praisonai._output.TERMINAL_CONTROLS` (C0, DEL, C1 incl. the one-byte CSI 0x9b, bidi
#: overrides and isolates) and lone surrogates (undecodable input, which a terminal cannot even be
#: written). Tab and newline are the caller's choice (``multiline``).
_UNSAFE: Final = dict.fromkeys(
    [*(TERMINAL_CONTROLS - {9, 10}), *range(0xD800, 0xE000)],
    "\ufffd",
)
#: A table's width when stdout is not a terminal: wide enough that no cell wraps.
_UNWRAPPED_WIDTH: Final = 1 << 16
_ONE_LINE: Final = {**_UNSAFE, 9: "\ufffd", 10: "\ufffd"}


def safe(text: str, *, multiline: bool = False) -> str:
    """``text`` harmless on a terminal: every character of :data:`_UNSAFE` shown as U+FFFD (and
    tab and newline too unless ``multiline``; a CRLF is kept as one newline). Every piece of data
    the CLI prints (titles, prompts, names, labels, file listings, tool output, hosted messages,
    errors that quote them) goes through here: the one filter between what an instance, a model,
    a vendor API or a repository controls and the user's terminal. A name or a label is shown
    without ``multiline``, so that a newline in it never makes a row of its own."""
    if multiline:
        return text.replace("\r\n", "\n").translate(_UNSAFE)
    return text.translate(_ONE_LINE)


def error(message: str) -> None:
    """One red line on stderr; no traceback (set PRAISONAI_DEBUG=1 to see one)."""
    _line(f"{_RED}error:{_RESET} " if _colour() else "error: ", message)


def note(message: str) -> None:
    """One dim line on stderr: what the command chose or did, never data."""
    if _colour():
        _line(_DIM, message + _RESET)
    else:
        _line("", message)


def _line(prefix: str, message: str) -> None:
    sys.stderr.write(f"{prefix}{safe(message, multiline=True)}\n")
    sys.stderr.flush()


def _colour() -> bool:
    return sys.stderr.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"


def table(columns: Sequence[str], rows: Sequence[Sequence[Any]], *, as_json: bool = False) -> None:
    """Rows under their column names, one line a row (a newline in a cell is shown as U+FFFD, never
    a row of its own), the first column never cut (it holds the id a user copies); when
    stdout is not a terminal, no cell is cut or wrapped (a script or a log gets whole reasons); with
    ``as_json`` a JSON list of objects whose keys are the column names (spaces become
    underscores) and whose values keep their types."""
    if as_json:
        keys = [c.replace(" ", "_") for c in columns]
        print_json([dict(zip(keys, row, strict=True)) for row in rows])
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    view = Table(box=None, pad_edge=False, header_style="bold")
    widest = max((len(safe(_cell(row[0]))) for row in rows), default=0)
    view.add_column(columns[0], no_wrap=True, min_width=widest)  # an id, copied from here: never cut
    for column in columns[1:]:
        view.add_column(column)
    for row in rows:
        view.add_row(*(escape(safe(_cell(cell))) for cell in row))  # data, not markup
    wide = None if sys.stdout.isatty() else _UNWRAPPED_WIDTH  # a terminal's own width, else no limit
    console = Console(soft_wrap=True, width=wide)
    with console.capture() as drawn:
        console.print(view)
    sys.stdout.write("".join(line.rstrip() + "\n" for line in drawn.get().splitlines()))


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "" if value is None else str(value)


def print_json(data: Any) -> None:
    """``data`` as JSON, in the one shape every ``--json`` has: booleans as booleans, sizes in
    bytes and durations in seconds as numbers (their keys say so: ``_bytes``, ``_s``), and each
    time (a key ending ``_at``) as an ISO 8601 string in UTC, however it was stored."""
    sys.stdout.write(json.dumps(_times_as_iso(data), indent=2) + "\n")


def _times_as_iso(data: Any, key: str = "") -> Any:
    if isinstance(data, dict):
        return {k: _times_as_iso(v, k) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [_times_as_iso(v) for v in data]
    if key.endswith("_at") and isinstance(data, int | float) and not isinstance(data, bool):
        moment = datetime.datetime.fromtimestamp(data, datetime.timezone.utc)
        return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return data


class Spinner:
    """What :func:`progress` yields: call it to stop the spinner (from any thread; once stopped,
    it stays stopped); :meth:`say` changes its text (a phase, not a line of its own)."""

    def __init__(self, status: Any = None, stop: Callable[[], None] = lambda: None) -> None:
        self._status, self._stop = status, stop

    def __call__(self) -> None:
        self._status = None
        self._stop()

    def say(self, what: str) -> None:
        if self._status is not None:
            from rich.markup import escape

            self._status.update(escape(safe(what)))


@contextmanager
def progress(what: str) -> Iterator[Spinner]:
    """A spinner on stderr saying ``what``, replaced by each ``praisonai.progress`` log line
    (setup steps, captures), until the block ends or the yielded :class:`Spinner` is called;
    nothing at all when stderr is not a terminal."""
    if not sys.stderr.isatty():
        yield Spinner()
        return
    from rich.console import Console
    from rich.markup import escape

    status = Console(stderr=True).status(escape(safe(what)), spinner="dots")
    handler = _StatusHandler(status)
    logger = logging.getLogger("praisonai.progress")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)

    def stop() -> None:
        logger.removeHandler(handler)
        status.stop()

    status.start()
    try:
        yield Spinner(status, stop)
    finally:
        stop()


@contextmanager
def transfer(what: str) -> Iterator[Callable[[int], None]]:
    """A line on stderr saying ``what``, with the bytes moved so far, their rate and the time
    spent, while the block runs; it yields the counter to give each step's bytes to (from any
    thread). Nothing at all when stderr is not a terminal."""
    if not sys.stderr.isatty():
        yield lambda count: None
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import (
        FileSizeColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
        TransferSpeedColumn,
    )
    from rich.table import Column

    # the numbers first: a long path is what gets cut on a narrow terminal
    cut = Column(no_wrap=True, overflow="ellipsis", ratio=1)
    what_column = TextColumn("{task.description}", table_column=cut)
    columns = (SpinnerColumn(), FileSizeColumn(), TransferSpeedColumn(), TimeElapsedColumn(), what_column)
    with Progress(*columns, console=Console(stderr=True), transient=True, expand=True) as bar:
        task = bar.add_task(escape(safe(what)), total=None)
        yield lambda count: bar.advance(task, count)


class _StatusHandler(logging.Handler):
    def __init__(self, status: Any) -> None:
        super().__init__(logging.INFO)
        self.status = status

    def emit(self, record: logging.LogRecord) -> None:
        """Each step whole, as a line of its own above the spinner (a setup command with all of
        its arguments), and the spinner's text the latest."""
        from rich.markup import escape

        text = escape(safe(record.getMessage()))  # a setup step a repository's definition wrote
        self.status.console.print(text, style="dim", soft_wrap=True, highlight=False)
        self.status.update(text)
