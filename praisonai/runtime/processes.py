"""Background processes in the helper's terms, whatever carries the requests: the arguments of
``__p_start``, what its statuses mean, and the ``__p_ps`` listing as :class:`ProcessInfo`.

A process lives under ``SPOOL/bg/<id>/`` (``meta``, ``pid``, ``out``, ``err`` and, once it ends,
``rc``), so a persistent channel (``runtime.channel``) and a helper run once per request
(``compute.oneshot``) start, list and kill the same processes the same way.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Mapping
from typing import Literal

from praisonai._errors import ExecError, PathNotFoundError, ProcessNotFoundError
from praisonai._types import ProcessInfo
from praisonai.runtime._wire import assignments


def start_request(command: str, cwd: str, env: Mapping[str, str]) -> tuple[ProcessInfo, list[str]]:
    """A new process's info and the ``__p_start`` arguments that start it from ``cwd``."""
    info = ProcessInfo("p" + uuid.uuid4().hex[:12], command, cwd, time.time(), "running")
    meta = json.dumps({"command": command, "cwd": cwd, "started_at": info.started_at})
    return info, [info.process_id, cwd, meta, command, *assignments(env)]


def check_started(status: str, cwd: str, spool: str) -> None:
    """Raise what ``__p_start``'s ``status`` means, unless it started the process ("0")."""
    if status == "nocwd":
        raise PathNotFoundError(f"working directory {cwd} does not exist", op="start")
    if status == "nospool":
        raise ExecError(
            f"could not start a background process: the helper cannot create {spool}/bg "
            "in the instance (its /tmp is full, read-only or not writable)",
            op="start",
        )
    if status != "0":
        raise ExecError(f"could not start a background process: {status}", op="start")


def parse_listing(body: bytes) -> list[ProcessInfo]:
    """``__p_ps``'s reply: one ``id <tab> state <tab> meta`` line per process."""
    found = []
    for line in body.decode(errors="replace").splitlines():
        pid, state, meta_text = line.split("\t", 2)
        meta = json.loads(meta_text)
        code = int(state) if state.lstrip("-").isdigit() else None
        kind: Literal["running", "exited", "lost"] = (
            "exited" if code is not None else "lost" if state == "lost" else "running"
        )
        found.append(ProcessInfo(pid, meta["command"], meta["cwd"], meta["started_at"], kind, code))
    return found


def found_one(found: list[ProcessInfo], process_id: str, instance_id: str) -> ProcessInfo:
    """The process a ``__p_ps <id>`` listing found, or ProcessNotFoundError."""
    if not found:
        raise ProcessNotFoundError(f"no background process {process_id!r} in {instance_id}", op="process")
    return found[0]


def checked_id(process_id: str) -> str:
    """``process_id`` if it has the form ``start_request`` gives, else ProcessNotFoundError
    (it becomes a path in the instance)."""
    if not re.fullmatch(r"p[0-9a-f]{12}", process_id):
        raise ProcessNotFoundError(f"{process_id!r} is not a background process id", op="process")
    return process_id


def process_file(spool: str, process_id: str, name: Literal["out", "err", "pid"]) -> str:
    """One of the process's files inside the instance."""
    return f"{spool}/bg/{process_id}/{name}"


def kill_args(spool: str, process_id: str) -> list[str]:
    """``__p_kill``'s arguments: the marker in the process tree's env, and its pid file."""
    return ["bg-" + process_id, process_file(spool, process_id, "pid")]
