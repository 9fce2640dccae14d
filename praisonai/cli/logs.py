"""``praisonai compute logs ID [--follow]``: the instance's watchdog notices and its background
processes' output, read inside the instance, each line prefixed with its source.

What an instance printed cannot pass for another source's line (every line gets its prefix here),
nor reach this terminal as control characters (``_output.safe``). ``--follow`` looks again every
``LOGS_FOLLOW_POLL_S`` for bytes past those shown, as ``docker logs -f`` does, until Ctrl-C or
the instance is gone; while following, a line is shown once it ends. Each look runs in the
instance, so a followed instance counts as in use and does not idle out.
"""

from __future__ import annotations

import codecs
import time
from typing import Annotated

import typer

from praisonai import _limits, _portal
from praisonai._errors import InstanceNotFoundError
from praisonai._types import Capability
from praisonai.cli import _output
from praisonai.cli._help import PlainCommand
from praisonai.cli.terminal import InstanceArg, provider_for
from praisonai.compute.base import ComputeProvider

_WATCHDOG = "watchdog"


def logs(
    instance_id: InstanceArg,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep showing new output until Ctrl-C.")
    ] = False,
) -> None:
    """Print the instance's watchdog notices and its background processes' output, each line
    prefixed with where it came from (read inside the instance)."""
    reader = _Reader(provider_for(instance_id, Capability.PROCESSES, "background processes"), instance_id)
    try:
        while True:
            for source, text in _portal.call(reader.new_output):
                reader.print(source, text, whole_lines_only=follow)
            if not follow:
                return
            time.sleep(_limits.LOGS_FOLLOW_POLL_S)
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    except InstanceNotFoundError:
        if not reader.looked:
            raise  # an unknown id: the CLI's one sentence
        _output.error(f"instance {instance_id} is gone")
        raise typer.Exit(1) from None


class _Reader:
    """The sources of one instance, each read from the byte after those already shown."""

    def __init__(self, provider: ComputeProvider, instance_id: str) -> None:
        self.provider, self.instance_id = provider, instance_id
        self.shown: dict[str, int] = {}  # bytes read so far, by source
        self.decoders: dict[str, codecs.IncrementalDecoder] = {}  # a character split between reads
        self.pending: dict[str, str] = {}  # a line not ended yet, by source
        self.looked = False

    async def new_output(self) -> list[tuple[str, str]]:
        """Each source's text since the last look, in order: the watchdog's, then each process's."""
        provider, instance_id = self.provider, self.instance_id
        found: list[tuple[str, str]] = []
        watchdog = getattr(provider, "watchdog_log", None)
        if watchdog:  # read by a command inside the instance: no host path, no link followed here
            offset = self.shown.get(_WATCHDOG, 0)
            result = await provider.execute(instance_id, ["tail", "-c", f"+{offset + 1}", "--", watchdog])
            if result.exit_code == 0 and result.stdout:
                found.append((_WATCHDOG, self._take(_WATCHDOG, result.stdout.encode())))
            elif result.exit_code != 0 and not self.looked:
                found.append((_WATCHDOG, "(no notices yet)\n"))
        for proc in await provider.processes.list(instance_id):
            for stream in ("stdout", "stderr"):
                source = f"{proc.process_id} {stream}"
                offset = self.shown.get(source, 0)
                data = await provider.processes.output(
                    instance_id, proc.process_id, stream=stream, offset=offset
                )
                if data:
                    found.append((source, self._take(source, data)))
        self.looked = True
        return found

    def _take(self, source: str, data: bytes) -> str:
        """``data`` as text, its bytes counted as shown (a character split between reads waits)."""
        self.shown[source] = self.shown.get(source, 0) + len(data)
        decoder = self.decoders.setdefault(source, codecs.getincrementaldecoder("utf-8")("replace"))
        return decoder.decode(data)

    def print(self, source: str, text: str, *, whole_lines_only: bool) -> None:
        """Print ``text``'s lines prefixed with ``source``; with ``whole_lines_only`` a last line
        not ended yet waits for the rest of it."""
        lines = (self.pending.pop(source, "") + text).split("\n")
        last = lines.pop()  # "" when the text ended its line
        if whole_lines_only and last:
            self.pending[source] = last
        elif last:
            lines.append(last)
        for line in lines:
            typer.echo(f"[{source}] {_output.safe(line)}")


def register(app: typer.Typer) -> None:
    """Add ``logs`` to the ``praisonai compute`` group."""
    app.command("logs", cls=PlainCommand)(logs)
