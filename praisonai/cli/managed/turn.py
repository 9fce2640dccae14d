"""Driving one turn of a managed agent from the terminal: its events into a view, tool approvals
asked on the terminal (or answered by ``--approve``), and signals turned into an interrupt.

The first SIGINT, SIGTERM or SIGHUP calls ``ManagedAgent.interrupt()``: the model stream closes,
the command running in the instance is killed, and the turn records that and ends; the command
then exits 128 + the signal's number (130 for Ctrl-C), as a shell reports it. A second signal
exits at once, without waiting for the turn to record its end.
"""

from __future__ import annotations

import os
import select
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any, Protocol

import typer

from praisonai._errors import ConfigError, PraisonAIError, SessionBusyError
from praisonai._limits import DEFAULT_TURN_TIMEOUT_S, check_timeout
from praisonai.cli import _output, _signals
from praisonai.cli.managed.describe import describe
from praisonai.cli.managed.outcome import EXIT_BUSY
from praisonai.cli.managed.transcript import JsonLines, Transcript

if TYPE_CHECKING:
    from praisonai.managed.agent import ManagedAgent
    from praisonai.managed.events import Event

View = Transcript | JsonLines


def view(json_: bool) -> View:
    """JSON lines on stdout, or the transcript on stdout with its notes on stderr."""
    return JsonLines(sys.stdout) if json_ else Transcript(sys.stdout, sys.stderr)


def check_text(prompt: str | None, title: str | None) -> None:
    """The prompt and the title, refused (exit 2) before anything is provisioned or stored."""
    from praisonai.managed.text import check_prompt, line_problem

    check_prompt(prompt)
    why = None if title is None else line_problem(title)
    if why is not None:
        raise ConfigError(f"--title cannot be used: {why}; give plain text on one line")


def announce(session_id: str) -> bool:
    """``session: msess_…`` on stderr, before anything else the turn prints."""
    sys.stderr.write(f"session: {session_id}\n")
    sys.stderr.flush()
    return True


def drive(agent: ManagedAgent, prompt: str | None, into: View, approver: Approver, *, stream: bool) -> int:
    """Stream one turn into ``into`` and return its exit status; the agent is closed after.

    A new session's id is announced with the first event. An error the turn recorded (a
    ``session.error``, then its end) was shown as an event and gives the exit status 4; one
    raised before the turn had an end to record propagates (``main`` prints it: exit 1 or 2)."""
    announced = agent.session_id is not None
    with (
        _interrupts(agent.interrupt, approver) as caught,  # until the agent is closed
        _output.progress("starting the turn") as waiting,
    ):
        try:
            try:
                for ev in agent.stream(prompt):
                    if not announced and agent.session_id:
                        announced = announce(agent.session_id)
                    _phase(waiting, ev)
                    if stream or not ev.ephemeral:
                        into.event(ev)
            except SessionBusyError as exc:
                _output.error(str(exc))
                return EXIT_BUSY
            except PraisonAIError:
                if into.outcome.stop_reason is None:
                    raise
            done = agent.last_result
            into.finish(agent.session_id, done.pending if done is not None else ())
        finally:
            agent.close()
    return 128 + caught.number if caught.number else into.outcome.exit_code()


#: What the spinner says before the turn's first output, by the event that starts the phase.
_PHASES = {
    "session.status_running": "starting the turn",
    "sandbox.provisioned": "instance ready",
    "sandbox.reattached": "instance reattached",
    "sandbox.resumed": "instance resumed",
    "sandbox.replaced": "instance replaced",
}
#: The events the transcript prints: the first of them ends the spinner.
_OUTPUT = ("event_start", "event_delta", "agent.", "session.error", "session.status_idle")


def _phase(waiting: _output.Spinner, ev: Event) -> None:
    """The spinner's phase before the first output (the session, its instance, the model's
    request), then nothing: the turn's own lines take over."""
    if ev.type.startswith(_OUTPUT):
        waiting()
    elif ev.type == "span.model_request_start":
        waiting.say(f"waiting for the model ({ev.data.get('model') or 'its first token'})")
    elif ev.type in _PHASES:
        waiting.say(_PHASES[ev.type])


# ---- approvals -------------------------------------------------------------------------------

TurnTimeoutOpt = Annotated[
    float,
    typer.Option(
        "--turn-timeout",
        metavar="SECONDS",
        show_default=False,
        help="End the turn (exit 4, the session kept) when the model or the hosted session sends "
        f"nothing for this long; keep-alives do not count (default {DEFAULT_TURN_TIMEOUT_S:g}; 0: no "
        "limit).",
    ),
]


def turn_timeout(seconds: float) -> float | None:
    """``--turn-timeout`` as ``ManagedAgent(turn_timeout_s=)`` takes it (0: no limit)."""
    return check_timeout(seconds, "--turn-timeout", none="0") or None


ApproveOpt = Annotated[
    str,
    typer.Option(
        "--approve",
        metavar="ask|allow|deny",
        help="Answer tool calls that need confirmation: allow or deny them all, or ask on the terminal "
        "(ask, the default; with no terminal the call is left pending and the exit status is 3).",
    ),
]
_APPROVALS = ("ask", "allow", "deny")


def check_approval(approve: str) -> None:
    """``--approve``'s value, refused (exit 2) unless it is one of ask, allow or deny."""
    if approve not in _APPROVALS:
        raise ConfigError(f"--approve takes ask, allow or deny, not {approve!r}")


class ToolRequestLike(Protocol):
    """What an approval needs of ``praisonai.managed.ToolRequest``."""

    @property
    def name(self) -> str: ...
    @property
    def input(self) -> Mapping[str, Any]: ...


class Approver:
    """``on_tool_confirmation`` for ``--approve``: ``allow`` or ``deny`` answers every request;
    ``ask`` asks on the terminal (y/N) and, with no terminal to ask on, leaves the request pending
    (``None``: the turn ends with requires_action). An interrupt (``stop`` set) abandons a
    question being asked, which leaves that request pending too."""

    def __init__(self, mode: str, into: View) -> None:
        self.mode, self.into = mode, into
        self.stop = threading.Event()

    def __call__(self, request: ToolRequestLike) -> str | Awaitable[str | None] | None:
        if self.mode != "ask":
            return self.mode
        if not sys.stdin.isatty():
            return None
        return self._ask_off_the_loop(request)

    async def _ask_off_the_loop(self, request: ToolRequestLike) -> str | None:
        """The question waits in a worker thread: the loop keeps the session's lease renewed."""
        import anyio.to_thread

        return await anyio.to_thread.run_sync(self.ask, request, abandon_on_cancel=True)

    def ask(self, request: ToolRequestLike) -> str | None:
        with self.into.lock:
            self.into.break_line()
            answer = confirm(f"allow {describe(request.name, request.input)}?", self.stop)
        return None if answer is None else "allow" if answer else "deny"


def confirm(question: str, stop: threading.Event | None = None) -> bool | None:
    """Ask ``question [y/N]`` on stderr and read the answer from the terminal on stdin: yes or
    no (anything else, an empty line included); ``None`` when stdin ends or ``stop`` is set."""
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    answer = _read_line(stop or threading.Event())
    if answer is None:
        sys.stderr.write("\n")
        return None
    return answer.strip().lower() in ("y", "yes")


def _read_line(stop: threading.Event) -> str | None:
    """A line from the terminal on stdin; ``None`` at its end or once ``stop`` is set."""
    fd = sys.stdin.fileno()
    while not stop.is_set():
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            data = os.read(fd, 4096)
            return data.decode(errors="replace") if data else None
    return None


# ---- signals ---------------------------------------------------------------------------------


class _Caught:
    number = 0


@contextmanager
def _interrupts(interrupt: Callable[[], None], approver: Approver) -> Iterator[_Caught]:
    """While the block runs, the first SIGINT/SIGTERM/SIGHUP calls ``interrupt`` and abandons a
    question being asked (the yielded record names the signal); the next one exits at once.

    The handler writes with ``os.write``: a buffered stream may be in the middle of a write."""
    caught = _Caught()

    def handler(number: int, frame: FrameType | None) -> None:
        if caught.number:  # the log stays consistent: resume marks a tool call cut short as such
            os.write(2, b"\nstopped without waiting for the turn to record its end\n")
            os._exit(128 + caught.number)
        caught.number = number
        os.write(2, b"\ninterrupting the turn (again to quit at once)\n")
        approver.stop.set()
        interrupt()

    with _signals.handling(handler):
        yield caught
