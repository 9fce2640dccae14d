"""One line for each thing a transcript shows: a tool call, its result, the usage, a re-created
hosted resource; and ``clean``, which makes model or instance text safe on a terminal."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from praisonai.cli import _output
from praisonai.cli.managed.outcome import USAGE_KEYS

if TYPE_CHECKING:  # not at run time: importing praisonai.managed loads SharedCompute
    from praisonai.managed.events import Event

_LINE = 110  # a tool line's description is cut here (a terminal's width, most of the time)


def describe(name: str, arguments: object) -> str:
    """One line for a tool call: ``$ COMMAND`` for a shell command, ``name(key='value', …)`` else."""
    args = arguments if isinstance(arguments, Mapping) else {}
    if name == "execute_command" and isinstance(args.get("command"), str):
        return cut("$ " + _one_line(args["command"]), _LINE)
    shown = ", ".join(f"{k}={cut(repr(v), 40)}" for k, v in args.items())
    return cut(_output.safe(f"{name}({shown})"), _LINE)  # a model names the tool


def describe_usage(usage: Mapping[str, Any]) -> str:
    """``20 input + 10 output tokens (cache: 0 read, 0 written), 2 requests``."""
    u = {k: int(usage.get(k) or 0) for k in USAGE_KEYS}
    requests = f", {u['requests']} request{'s' if u['requests'] != 1 else ''}" if "requests" in usage else ""
    return (
        f"{u['input_tokens']} input + {u['output_tokens']} output tokens (cache: "
        f"{u['cache_read_input_tokens']} read, {u['cache_creation_input_tokens']} written){requests}"
    )


def recreated_line(note: Mapping[str, Any]) -> str:
    """``remote agent re-created: agent_… was not found; now agent_…`` for a hosted resource the
    API had lost (a ``remote.recreated`` event, or the session's record of one)."""
    return (
        f"remote {note.get('kind')} re-created: {note.get('previous_id')} was not found on the API; "
        f"now {note.get('remote_id')}"
    )


def clean(text: str) -> str:
    """``text`` without terminal control characters (tab and newline kept): a model or a command
    in the instance must not move the cursor, rewrite lines or retitle the user's terminal."""
    return _output.safe(text, multiline=True)


def _one_line(text: str) -> str:
    lines = [line for line in clean(text).strip().splitlines() if line.strip()]
    if not lines:
        return ""
    return lines[0] + (f"  (+{len(lines) - 1} more lines)" if len(lines) > 1 else "")


def cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def result_line(ev: Event) -> str:
    """``[exit 0, 0.12s] first line`` for a tool's result."""
    code, took = ev.data.get("exit_code"), ev.data.get("duration_s")
    status = f"exit {code}" if code is not None else ("error" if ev.data.get("is_error") else "ok")
    when = f", {took:.2f}s" if isinstance(took, int | float) else ""
    return f"[{status}{when}] {cut(_one_line(ev.text), 80)}".rstrip()
