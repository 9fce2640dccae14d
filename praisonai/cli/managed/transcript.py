"""How ``praisonai managed`` shows a session's events: as a transcript a person reads, or as JSON
lines (how the turn ended is :mod:`.outcome`'s; each line's words are :mod:`.describe`'s).

A live turn (``run``, ``sessions resume``) streams its transcript to stdout as it happens: the
model's text inline, each tool call on one line that its result completes (exit code, duration,
first line of output). What is *about* the run rather than its output (the sandbox, errors,
usage, how the turn ended and what to do next) goes to stderr. A stored transcript (``sessions
show --events``) is the same lines, all on stdout, with the user's messages and each turn's end.

Colour is plain ANSI and only on a terminal: streaming a turn does not import rich. Every piece
of an event (a model's text, a tool's name and output, a hosted error) goes through
:func:`~praisonai.cli.managed.describe.clean` before it is written: :meth:`Transcript._paint`,
:meth:`Transcript._note` and the few plain lines each filter what they are given.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, TextIO

from praisonai.cli.managed.describe import clean, cut, describe, describe_usage, recreated_line, result_line
from praisonai.cli.managed.outcome import Outcome

if TYPE_CHECKING:  # not at run time: importing praisonai.managed loads SharedCompute
    from praisonai.managed.events import Event

_BOLD, _DIM, _RED, _RESET = "\x1b[1m", "\x1b[2m", "\x1b[31m", "\x1b[0m"


def colour(stream: TextIO) -> bool:
    return stream.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"


class JsonLines:
    """Each event as one JSON object (``Event.to_json()``) per line, flushed as it comes."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.outcome = Outcome()
        self.lock = threading.Lock()

    def event(self, ev: Event) -> None:
        with self.lock:
            self.outcome.see(ev)
            self.out.write(ev.dumps() + "\n")
            self.out.flush()

    def break_line(self) -> None:
        """Nothing: a line is always complete here."""

    def finish(self, session_id: str | None, pending: Sequence[Mapping[str, Any]] = ()) -> None:
        """Nothing: the last event, ``session.status_idle``, says how the turn ended."""


class Transcript:
    """Events as lines a person reads. ``notes`` takes what is about the run (stderr live);
    ``stored`` also shows the user's messages and each turn's end, as ``sessions show`` does."""

    def __init__(self, out: TextIO, notes: TextIO | None = None, *, stored: bool = False) -> None:
        self.out, self.notes, self.stored = out, notes or out, stored
        self.outcome = Outcome()
        self.lock = threading.Lock()  # the approval prompt writes from another thread
        self._colour = colour(out)
        self._open = False  # the last line on ``out`` is not finished
        self._tool: str | None = None  # the tool call whose line is open, waiting for its result
        self._streamed: set[str] = set()
        self._uses: dict[str, Event] = {}
        self._held: list[str] = []  # notes for while a tool line is open (they would cut it)
        self._handlers: dict[str, Callable[[Event], None]] = {
            "event_delta": self._delta,
            "agent.message": self._message,
            "user.message": self._user,
            "agent.tool_use": self._use,
            "agent.custom_tool_use": self._use,
            "agent.tool_result": self._result,
            "user.custom_tool_result": self._result,
            "user.tool_confirmation": self._confirmation,
            "user.interrupt": self._interrupt,
            "session.error": self._error,
            "session.status_idle": self._idle,
            "session.resumed": self._resumed,
            "sandbox.provisioned": self._sandbox,
            "sandbox.reattached": self._sandbox,
            "sandbox.resumed": self._sandbox,
            "sandbox.replaced": self._sandbox,
            "remote.recreated": self._recreated,
        }

    def event(self, ev: Event) -> None:
        with self.lock:
            self.outcome.see(ev)
            handler = self._handlers.get(ev.type)
            if handler is not None:
                handler(ev)
            elif ev.type not in _SILENT:
                self._line(
                    self._paint(f"[{ev.type}] {cut(json.dumps(dict(ev.data), default=str), 100)}", _DIM)
                )
            self.out.flush()

    def break_line(self) -> None:
        """End the open line (before something else, such as a prompt, is written)."""
        if self._open:
            self.out.write("\n")
            self.out.flush()
            self._open = False
        self._line_done()

    def finish(self, session_id: str | None, pending: Sequence[Mapping[str, Any]] = ()) -> None:
        """Close the transcript and say, on ``notes``, the turn's usage and what to do next
        (``pending``: the uses waiting for approval, as the session records them)."""
        with self.lock:
            self.break_line()
            done = self.outcome
            self._note(f"usage: {describe_usage(done.usage)}")
            resume = f"praisonai managed sessions resume {session_id or 'SESSION_ID'}"
            if done.interrupted:
                self._note(f"interrupted: the session is kept; continue it with: {resume} PROMPT")
            elif done.stop_reason == "requires_action":
                known = {str(p.get("event_id")): p for p in pending}
                known.update((i, u.data) for i, u in self._uses.items())
                for use_id in done.waiting:
                    use = known.get(use_id)
                    what = describe(str(use.get("name")), use.get("input")) if use else use_id
                    self._note(f"waiting for approval: {what}")
                self._note(f"approve or deny with: {resume} --approve allow|deny")
            elif done.failed or done.stop_reason == "retries_exhausted":
                self._note(f"the turn failed; the session is kept: try again with: {resume} PROMPT")
            elif done.stop_reason not in (None, "end_turn"):
                self._note(f"the turn ended: {done.stop_reason}")
            elif done.stop_reason is None:
                self._note("the turn ended without its session.status_idle event")

    # ---- one handler per event type ----

    def _delta(self, ev: Event) -> None:
        text = clean(ev.text)
        if not text:
            return
        if not self._open or self._tool is not None:
            self.break_line()
        self._streamed.add(str(ev.data.get("event_id")))
        self.out.write(text)
        self._open = not text.endswith("\n")

    def _message(self, ev: Event) -> None:
        if ev.id in self._streamed:
            self.break_line()
        elif ev.text:
            self._line(clean(ev.text).rstrip("\n"))
        if ev.data.get("interrupted"):
            self._line(self._paint("[the message was cut by the interrupt]", _DIM))
        elif ev.data.get("partial"):
            self._line(self._paint("[partial: the reply was cut; see the error below]", _DIM))

    def _user(self, ev: Event) -> None:
        if self.stored:
            self._line(
                self._paint("\n".join("> " + line for line in clean(ev.text).splitlines() or [""]), _BOLD)
            )

    def _use(self, ev: Event) -> None:
        self._uses[ev.id] = ev
        self.break_line()
        self.out.write(self._paint(describe(str(ev.data.get("name", "?")), ev.data.get("input")), _BOLD))
        self._open, self._tool = True, ev.id

    def _result(self, ev: Event) -> None:
        use_id = str(ev.data.get("tool_use_id") or ev.data.get("custom_tool_use_id") or "")
        failed = bool(ev.data.get("is_error")) or ev.data.get("exit_code") not in (None, 0)
        shown = self._paint(result_line(ev), _RED if failed else _DIM)
        if self._tool == use_id:
            self.out.write("  " + shown + "\n")
            self._open = False
            self._line_done()
            return
        use = self._uses.get(use_id)  # unknown: the use was made by an earlier process
        name = (use.data if use else ev.data).get("name") or "tool"
        self._line(f"  {clean(str(name))} {shown}")

    def _confirmation(self, ev: Event) -> None:
        verdict = "allowed" if ev.data.get("result") == "allow" else "denied"
        message = ev.data.get("deny_message")
        shown = self._paint(f"({verdict}{': ' + str(message) if message else ''})", _DIM)
        if self._tool == ev.data.get("tool_use_id"):
            self.out.write(" " + shown)
        else:
            self._line("  " + shown)

    def _interrupt(self, ev: Event) -> None:
        self._line(self._paint("[interrupted]", _DIM))

    def _error(self, ev: Event) -> None:
        error = ev.data.get("error") or {}
        retry = (error.get("retry_status") or {}).get("type")
        kind = f"{error.get('type')}: " if error.get("type") else ""
        text = f"{kind}{error.get('message', '')}{f' ({retry})' if retry else ''}"
        self._note(text, error=True)

    def _idle(self, ev: Event) -> None:
        if self.stored:
            self._line(self._paint(f"-- {ev.stop_reason}", _DIM))

    def _resumed(self, ev: Event) -> None:
        if self.stored:
            d = ev.data
            self._line(
                self._paint(
                    f"-- resumed by {d.get('host')}:{d.get('pid')} (lease {d.get('lease_epoch')})", _DIM
                )
            )

    def _sandbox(self, ev: Event) -> None:
        d = ev.data
        what = {
            "sandbox.provisioned": "new",
            "sandbox.reattached": "reattached",
            "sandbox.resumed": "resumed from pause, its files kept",
        }.get(ev.type)
        if what is None:  # replaced
            lost = ", ".join(map(str, d.get("lost") or ())) or "nothing"
            text = (
                f"{d.get('previous_instance_id')} was gone; replaced by {d.get('instance_id')} (lost: {lost})"
            )
        else:
            text = f"{d.get('provider')} {d.get('instance_id')} ({what})"
        self._note("sandbox: " + text)

    def _recreated(self, ev: Event) -> None:
        self._note(recreated_line(ev.data))

    # ---- writing ----

    def _line(self, text: str) -> None:
        self.break_line()
        self.out.write(text + "\n")

    def _note(self, text: str, *, error: bool = False) -> None:
        """A line on ``notes`` (filtered: it quotes a remote's error, an instance's id); while a
        tool line is open, it waits for the result to complete it."""
        text = clean(text)
        prefix = (_RED + "error:" + _RESET + " " if colour(self.notes) else "error: ") if error else ""
        self._held.append(prefix + text + "\n")
        if self._tool is None:
            self.break_line()

    def _line_done(self) -> None:
        """The open line is finished: no tool line is open, and the notes held for it are written."""
        self._tool = None
        if self._held:
            self.notes.write("".join(self._held))
            self.notes.flush()
            self._held.clear()

    def _paint(self, text: str, style: str) -> str:
        """``text`` filtered (:func:`clean`), then coloured: the only escape sequences written."""
        text = clean(text)
        return f"{style}{text}{_RESET}" if self._colour else text


#: Events a transcript shows nothing for (the outcome still reads them; the usage shows at the end).
_SILENT: Final = frozenset(
    {
        "event_start",
        "session.status_running",
        "span.model_request_start",
        "span.model_request_end",
        "session.usage",
    }
)
