"""Every default limit in one place. Change a number here, not at a call site."""

from __future__ import annotations

import math

from praisonai._errors import ConfigError

#: Seconds an exec may run when the caller does not say (``timeout=None`` means no limit).
DEFAULT_EXEC_TIMEOUT_S = 300.0

#: Bytes kept per output stream (stdout, stderr): half from the head, half from the tail.
DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024

#: Seconds to wait for the last output after a timed-out process tree was killed.
KILL_GRACE_S = 5.0

#: Seconds an exiting client waits for its keeper to kill what its commands started and end (ms).
KEEPER_EXIT_S = 2.0

#: Seconds a docker instance's main channel (its helper on the container's stdin) has to answer
#: once attached (it takes ~1 ms); later, an exec channel is opened instead: that helper is gone
#: (an earlier client used it) or too busy to be worth the wait.
MAIN_CHANNEL_HELLO_S = 2.0

#: Largest file ``read_file`` returns; larger files go through ``download``.
MAX_READ_BYTES = 256 * 1024 * 1024

#: Idle instances stop after this many seconds unless the config says otherwise.
DEFAULT_IDLE_TIMEOUT_S = 300

#: Characters of a failed command's stderr (its tail) or of a vendor's error answer quoted in
#: one of our errors: enough to say why, short enough for one message.
ERROR_DETAIL_CHARS = 300

#: Retries of a vendor call (``praisonai._retry``): the n-th wait is random in
#: [0, min(RETRY_CAP_S, RETRY_BASE_S * 2**n)] seconds ("full jitter": clients that failed together
#: do not come back together).
RETRY_BASE_S = 0.25
RETRY_CAP_S = 10.0
#: Largest event a remote may send (one SSE frame, one listed event): past it the turn ends in
#: one sentence instead of holding it. 8 MiB holds a model's longest reply and a tool result
#: with an image (the API takes 5 MB images) with room to spare.
MAX_REMOTE_EVENT_BYTES = 8 * 1024 * 1024

#: Seconds a process waits for a lock of its home (a capture another process builds, a warm
#: pool's fill) before it gives up with a sentence naming the holder.
LOCK_WAIT_S = 900.0

#: Seconds after which a failed reaping shutdown is tried again (the home's reaper doubles it).
REAP_RETRY_AFTER_S = 30.0

#: The longest ``retry-after`` (or ``retry-after-ms``) of a 429/529 answer that is waited out
#: before a retry (beside RETRY_CAP_S, the backoff's own cap); a longer one is not slept
#: through: the error says when to try again.
RETRY_AFTER_CAP_S = 60.0
#: Seconds a hosted session's event stream may go without an event (keep-alive pings do not
#: count) before it is reopened and the events it missed are listed: well under the SDK's 600 s
#: read timeout. A turn with a ``turn_timeout_s`` reopens it after a fifth of that, if sooner.
HOSTED_READ_DEADLINE_S = 60.0
#: Largest answer (a page of events, a resource) a remote's JSON API may send.
MAX_REMOTE_ANSWER_BYTES = 64 * 1024 * 1024

#: Seconds one reaping shutdown (by this process's reaper or the home's) may take before it is
#: given up and tried again later.
SHUTDOWN_TIMEOUT_S = 120.0
#: A warm instance this close to its idle limit or ttl is not handed out: its watchdog is about
#: to stop it (``praisonai.compute.warm``).
WARM_CLAIM_MARGIN_S = 10.0
#: How many instances one refill of a warm pool provisions at once.
WARM_FILL_CONCURRENCY = 4
#: A refill child makes at most this many times its pool's size before it ends.
WARM_REFILL_ROUNDS = 3
#: How long a process that claimed waits at exit for its refill child to have started.
REFILL_START_WAIT_S = 5.0
#: A detached process's log in the home (the home's reaper, warm refills) is started afresh
#: when it grew past this.
LOG_MAX_BYTES = 1 << 20

#: Most sessions one ``list_sessions`` call (``managed sessions list --limit``) returns.
MAX_SESSIONS_LISTED = 100_000

#: Most model requests one managed turn may be allowed (``max_turns``, ``--max-turns``).
MAX_TURN_REQUESTS = 10_000

#: Largest token budget a managed session may be given (``budget_tokens``, ``--budget-tokens``).
MAX_BUDGET_TOKENS = 10**12

#: Seconds a managed turn (either loop) or an agent's model request waits for the remote to send
#: something that moves it on: the model's first byte (the SDK's own retries included), each next
#: streamed event, a hosted session's next event. Keep-alives (SSE comments, ``ping`` events) do
#: not count. Half the SDKs' 600 s read timeout, as Codex's stream idle timeout: a reasoning model
#: may think for minutes before its first token, a stalled stream is cut well before ten. Set
#: with ``ManagedAgent(turn_timeout_s=)`` or ``--turn-timeout`` (an ``Agent`` has the default);
#: ``None`` (0 on the command line): no deadline of ours.
DEFAULT_TURN_TIMEOUT_S = 300.0

#: Seconds one package-manager run or one setup command may take while provisioning.
SETUP_TIMEOUT_S = 900.0

#: The longest any timeout, idle timeout or ttl may be: a year (and a day). Longer is a typo
#: or ``1e20``, which sleeps and shell arithmetic cannot hold.
MAX_SECONDS = 366 * 24 * 3600

#: Largest configuration file we read (kubeconfig, Modal config): they are a few kilobytes.
MAX_CONFIG_FILE_BYTES = 4 * 1024 * 1024

#: Linux refuses one ``NAME=value`` string over 128 KiB (MAX_ARG_STRLEN) when it starts a
#: program (E2BIG), whatever the provider: one variable is at most this many bytes, NAME= included.
MAX_ENV_ENTRY_BYTES = 128 * 1024 - 1
#: All variables of one exec or config together (Linux allows ~2 MiB of arguments and
#: environment at once; the command line and the instance's own variables need the rest).
MAX_ENV_BYTES = 1024 * 1024

#: A provider written to PraisonAI's protocol gets files as command lines (``sh -c`` takes at
#: most 128 KiB in one argument): text up to this size goes inline as a heredoc, anything larger
#: or binary as base64 in calls of this many raw bytes (~87 KiB encoded).
FOREIGN_INLINE_BYTES = 64 * 1024
#: Bytes of a file one read call through such a provider returns (as base64 on its stdout).
FOREIGN_READ_CHUNK_BYTES = 1024 * 1024

#: Linux's PATH_MAX (with its NUL) and NAME_MAX: longer paths fail with ENAMETOOLONG.
MAX_PATH_BYTES = 4095
MAX_NAME_BYTES = 255

#: Bounds of numeric options: ``name: (lowest, highest, unit, whole)``, checked by
#: :func:`check_number`. Each option is written once here; pydantic models and constructors
#: refer to it by name.
BOUNDS: dict[str, tuple[float, float, str, bool]] = {
    "cpu": (0.01, 256, "cores", False),
    "memory_mb": (16, 1 << 20, "MiB", True),
    "disk_mb": (64, 1 << 24, "MiB", True),
    "gpu": (1, 64, "GPUs", True),
    "size": (1, 1000, "instances", True),  # WarmPool(size=…)
    "writes_per_s": (0.1, 1000, "writes a second", False),
    "write_burst": (1, 1000, "writes", True),
    "run_as_user": (0, 2**31 - 1, "", True),  # a uid
    "scheduled_timeout_s": (1, MAX_SECONDS, "seconds", False),
    "ready_timeout_s": (1, MAX_SECONDS, "seconds", False),
    "renew_s": (0.1, 24 * 3600, "seconds", False),
    "connect_timeout": (0.1, 3600, "seconds", False),
    "start_timeout": (0.1, 3600, "seconds", False),
    "keepalive_s": (0, 3600, "seconds (0: off)", False),
    "keepalive_count": (1, 100, "probes", True),
}


def check_timeout(
    value: object, name: str = "timeout", *, allow_zero: bool = True, none: str = "None"
) -> float | None:
    """``value`` as seconds: a finite number (> 0, or >= 0 with ``allow_zero``), or ``None`` for
    no limit. The one check every timeout a user gives goes through (exec, the CLI's
    ``--timeout``, the environment file's ``setup_timeout``, waits).

    ``name`` is the argument as the user wrote it and ``none`` how they spell "no limit", both
    for the message.

    Raises:
        ConfigError: a bool, a string, NaN, infinity, a negative number (or zero, without
            ``allow_zero``), more than ``MAX_SECONDS``; one sentence.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        shown = f"{type(value).__name__} {value!r}"
    elif not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        shown = repr(value)
    elif value > MAX_SECONDS:
        raise ConfigError(
            f"{name} must be at most {MAX_SECONDS} seconds (366 days; {none} for no limit), not {value!r}",
            op="timeout",
        )
    else:
        return float(value)
    bound = ">= 0" if allow_zero else "> 0"
    raise ConfigError(
        f"{name} must be a finite number of seconds {bound} ({none} for no limit), not {shown}",
        op="timeout",
    )


def check_number(value: object, name: str, bound: str | None = None) -> float:
    """``value`` for the numeric option ``name``, within ``BOUNDS[bound or name]``: a number
    (not a bool, not a string) that is finite, whole where the option counts things, and within
    the range. The one check of every bounded numeric option.

    Raises:
        ConfigError: one sentence naming the option, its range and the value given.
    """
    low, high, unit, whole = BOUNDS[bound or name]
    kind = "a whole number" if whole else "a number"
    span = " to ".join(str(int(b)) if float(b).is_integer() else str(b) for b in (low, high))
    rule = f"{name} must be {kind}{f' of {unit}' if unit else ''} from {span}"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{rule}, not {type(value).__name__} {value!r:.40}", op="config")
    if not math.isfinite(value) or not low <= value <= high or (whole and value != int(value)):
        raise ConfigError(f"{rule}, not {value!r}", op="config")
    return value


#: Seconds the one-off check that bubblewrap can make a sandbox here may take (it takes ms).
BWRAP_PROBE_TIMEOUT_S = 10.0

#: Sessions ``praisonai managed sessions list`` shows when no ``--limit`` is given.
DEFAULT_SESSIONS_LISTED = 20

#: Days unused before ``praisonai env captures --prune`` removes a capture, when neither
#: ``--older-than`` nor ``--keep`` is given.
DEFAULT_CAPTURE_PRUNE_DAYS = 14.0
#: Days after its creation before ``praisonai compute gc`` removes a snapshot, when neither
#: ``--snapshots-older-than`` nor ``--snapshots-keep`` is given (one an instance still starts from
#: stays).
DEFAULT_SNAPSHOT_PRUNE_DAYS = 14.0
#: The most instances one ``fork`` makes (each is a whole instance, made concurrently).
FORK_MAX = 64

#: Seconds ``praisonai sandbox run``, once interrupted, waits for its instance's removal before
#: it exits anyway.
INTERRUPT_CLEANUP_WAIT_S = 120.0

#: Bytes one read of an exposed port's relay moves at a time (host side and in the instance).
PORT_RELAY_CHUNK = 64 * 1024

#: Reads of an exposed port's exec relay held for a slow client before its reader waits.
PORT_RELAY_BACKLOG = 64

#: Seconds a docker forward tries the container's bridge address before it relays through exec.
PORT_DIRECT_CONNECT_S = 1.0

#: Seconds ``expose`` waits for its check that the instance can run the port relay (python3).
PORT_PROBE_TIMEOUT_S = 30.0

#: Seconds a Daytona signed preview URL (``expose``) stays valid; a later ``expose`` of the same
#: port gives the same URL while more than half of this is left, else a new one.
PREVIEW_URL_TTL_S = 3600

#: Seconds one file-API call (list, stat, remove, rename, mkdir) may run inside an instance.
FILE_OP_TIMEOUT_S = 120.0
#: Bytes of listing one ``list`` call accepts from an instance (about 100 000 entries); a bigger
#: tree is refused with a sentence asking for a smaller depth.
FILE_LIST_MAX_BYTES = 16 * 1024 * 1024
#: The largest terminal ``open_pty`` accepts, in columns and in rows (a pty's size is 16-bit).
PTY_MAX_SIDE = 10_000
#: A terminal's size when the caller does not say, as a VT100's.
PTY_DEFAULT_COLS = 80
PTY_DEFAULT_ROWS = 24

#: Characters of one tool result handed to a model (its head and tail, with a note on what was
#: cut); ``PRAISONAI_TOOL_RESULT_CHARS`` sets another. A command's output is capped at
#: ``DEFAULT_MAX_OUTPUT_BYTES`` per stream first; this keeps one answer from filling the context.
TOOL_RESULT_MAX_CHARS = 30_000

#: Seconds between two looks of ``praisonai compute logs --follow`` for new output.
LOGS_FOLLOW_POLL_S = 1.0

#: Seconds a call waits for a docker instance frozen by something other than a pause (a
#: snapshot's freeze for its commit) to be thawed by it; past that, its freezer is taken for dead
#: and the instance is resumed as a paused one is.
FOREIGN_FREEZE_WAIT_S = 60.0
