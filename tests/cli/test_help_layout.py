"""The help layout ``praisonai._help.PlainCommand`` produces, exactly.

PlainCommand overrides two methods of click's ``Command`` as typer runs them from its own copy of
click (typer's plain layout labels arguments with Python types: ``SESSION_ID <str>``); pyproject.toml
pins typer to the range this was tested with. These tests are the tripwire for that pin: a typer
that lays help out differently fails here, before a user sees ``{SESSION_ID}``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from praisonai.cli._app import build
from praisonai.cli._groups import GROUPS
from praisonai.cli._help import PlainCommand

WIDTH = 100

RESUME = """\
Usage: praisonai managed sessions resume [OPTIONS] SESSION_ID [PROMPT]

  Continue a stored session, from any process: its instance is reattached (or replaced, and said so)
  and its transcript rebuilt. With no PROMPT, the tool calls waiting for approval are answered and
  the turn goes on; with none waiting, the session is shown.

Arguments:
  SESSION_ID  A session id (msess_…).
  [PROMPT]    The next message (none: answer what is pending, or show the session's state).

Options:
  --approve ask|allow|deny  Answer tool calls that need confirmation: allow or deny them all, or ask
                            on the terminal (ask, the default; with no terminal the call is left
                            pending and the exit status is 3).  [default: ask]
  --force                   Take the session over even from a live process that holds it.
  --stream / --no-stream    Show the text as it is written.  [default: stream]
  --turn-timeout SECONDS    End the turn (exit 4, the session kept) when the model or the hosted
                            session sends nothing for this long; keep-alives do not count (default
                            300; 0: no limit).
  --json                    Print JSON.
  -h, --help                Show this message and exit.
"""

STOP = """\
Usage: praisonai compute stop [OPTIONS] [INSTANCE_ID]...

  Shut down instances, found in the ledger or in a provider's own list; print a tally.

  An instance whose provision never finished and whose provider does not answer has nothing left to
  stop here: its ledger row is forgotten, and said so.

  Exits 1 when an instance is unknown or could not be stopped, or a provider could not list; 2,
  before anything is done, when an argument is not an instance id.

Arguments:
  [INSTANCE_ID]...  Instances to stop.

Options:
  --all       Stop every instance `ps` shows.
  --json      Print JSON.
  -h, --help  Show this message and exit.
"""

CAPTURES = """\
Usage: praisonai env captures [OPTIONS]

  List this home's captures (most recently used first), or prune them by age or count.

Options:
  -c, --compute NAME   Provider (default: the file's backend, else the default).
  --prune              Remove old captures (see --older-than, --keep).
  --older-than NUMBER  Days unused before --prune removes one (default 14).
  --keep INTEGER       With --prune: keep the N most recently used.
  --dry-run            With --prune: only say what would go.
  --json               Print JSON.
  -h, --help           Show this message and exit.
"""


def help_of(*words: str) -> str:
    r = CliRunner().invoke(
        build(list(GROUPS)), [*words, "--help"], prog_name="praisonai", terminal_width=WIDTH
    )
    assert r.exit_code == 0, r.output
    return r.output


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (("managed", "sessions", "resume"), RESUME),  # a required and an optional argument
        (("compute", "stop"), STOP),  # a repeatable argument
        (("env", "captures"), CAPTURES),  # options whose metavar stands for their type
    ],
)
def test_help_layout_is_exactly_plain_commands(words: tuple[str, ...], expected: str) -> None:
    assert help_of(*words).startswith(expected)


def every_command() -> Iterator[tuple[tuple[str, ...], object]]:
    def walk(command: object, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], object]]:
        subcommands = getattr(command, "commands", None)
        if subcommands is None:
            yield path, command
        for name, sub in (subcommands or {}).items():
            yield from walk(sub, (*path, name))

    return walk(get_command(build(list(GROUPS))), ())


COMMANDS = list(every_command())


@pytest.mark.parametrize(("words", "command"), COMMANDS, ids=[" ".join(w) for w, _ in COMMANDS])
def test_every_command_is_laid_out_plainly(words: tuple[str, ...], command: object) -> None:
    """Each command is a PlainCommand, each argument declares its metavar, and no help shows a
    type label or a braced argument."""
    assert isinstance(command, PlainCommand)
    params = getattr(command, "params", [])
    assert all(p.metavar for p in params if p.param_type_name == "argument")
    text = help_of(*words)
    assert not re.search(r"<(bool|str|int|float|path|list\[str\])>", text), text
    assert "{" not in text.splitlines()[0]
