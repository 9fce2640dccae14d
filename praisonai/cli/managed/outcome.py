"""How a turn of ``praisonai managed`` ended, as its events tell it, and the exit status that says so."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:  # not at run time: importing praisonai.managed loads SharedCompute
    from praisonai.managed.events import Event

EXIT_OK: Final = 0
EXIT_REQUIRES_ACTION: Final = 3
EXIT_ERROR: Final = 4
EXIT_LIMIT: Final = 5
EXIT_REFUSAL: Final = 6
EXIT_BUSY: Final = 7
EXIT_INTERRUPTED: Final = 130

#: A turn's stop reason -> the command's exit status. An unknown reason is a failure (never 0).
STOP_EXITS: Final[Mapping[str, int]] = {
    "end_turn": EXIT_OK,
    "requires_action": EXIT_REQUIRES_ACTION,
    "retries_exhausted": EXIT_ERROR,
    "budget_reached": EXIT_LIMIT,
    "max_turns": EXIT_LIMIT,
    "refusal": EXIT_REFUSAL,
    "interrupted": EXIT_INTERRUPTED,
}

#: The table every command that runs a turn shows in its help (``\b``: click keeps the lines).
EXIT_CODES_HELP: Final = f"""\b
Exit codes:
  {EXIT_OK}    the turn ended (end_turn)
  1    a failure outside the turn (provider, instance, store, unknown session)
  2    bad input (an option's value, a missing API key)
  {EXIT_REQUIRES_ACTION}    a tool call waits for approval (requires_action)
  {EXIT_ERROR}    the turn failed (a model error, retries exhausted)
  {EXIT_LIMIT}    the token budget or the turn limit was reached
  {EXIT_REFUSAL}    the model refused
  {EXIT_BUSY}    another process is running a turn of this session
  {EXIT_INTERRUPTED}  interrupted by Ctrl-C (129 SIGHUP, 143 SIGTERM); the session is kept"""


class Outcome:
    """What a turn's events say about its end: the stop reason, an error not being retried, an
    interrupt, the tool calls left waiting, and the usage summed over its model requests."""

    def __init__(self) -> None:
        self.stop_reason: str | None = None
        self.failed = False
        self.interrupted = False
        self.waiting: tuple[str, ...] = ()
        self.usage: dict[str, int] = dict.fromkeys(USAGE_KEYS, 0)

    def see(self, ev: Event) -> None:
        if ev.type == "session.status_idle":
            self.stop_reason = ev.stop_reason
            reason = ev.data.get("stop_reason") or {}
            self.waiting = (
                tuple(map(str, reason.get("event_ids") or ())) if isinstance(reason, Mapping) else ()
            )
        elif ev.type == "session.error":
            retry = (ev.data.get("error") or {}).get("retry_status") or {}
            self.failed = self.failed or retry.get("type") != "retrying"
        elif ev.type == "user.interrupt" or (ev.type == "agent.message" and ev.data.get("interrupted")):
            self.interrupted = True
        elif ev.type == "span.model_request_end":
            for key, value in (ev.data.get("model_usage") or {}).items():
                if key in self.usage and isinstance(value, int):
                    self.usage[key] += value
            self.usage["requests"] += 1

    def exit_code(self) -> int:
        """The exit status for this end; a turn that never reached idle, or that ended on an
        error it did not retry, is a failure whatever else it says."""
        if self.interrupted:
            return EXIT_INTERRUPTED
        code = STOP_EXITS.get(self.stop_reason or "", EXIT_ERROR)
        return EXIT_ERROR if code == EXIT_OK and self.failed else code


#: The usage a turn sums over its model requests, as ``describe_usage`` shows it.
USAGE_KEYS: Final = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "requests",
)
