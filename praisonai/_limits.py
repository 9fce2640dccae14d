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

#: Largest file ``read_file`` returns; larger files go through ``download``.
MAX_READ_BYTES = 256 * 1024 * 1024

#: Idle instances stop after this many seconds unless the config says otherwise.
DEFAULT_IDLE_TIMEOUT_S = 300

#: Most sessions one ``list_sessions`` call (``managed sessions list --limit``) returns.
MAX_SESSIONS_LISTED = 100_000

#: Most model requests one managed turn may be allowed (``max_turns``, ``--max-turns``).
MAX_TURN_REQUESTS = 10_000

#: Largest token budget a managed session may be given (``budget_tokens``, ``--budget-tokens``).
MAX_BUDGET_TOKENS = 10**12

#: Seconds one package-manager run or one setup command may take while provisioning.
SETUP_TIMEOUT_S = 900.0


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
            ``allow_zero``); one sentence.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        shown = f"{type(value).__name__} {value!r}"
    elif not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        shown = repr(value)
    else:
        return float(value)
    bound = ">= 0" if allow_zero else "> 0"
    raise ConfigError(
        f"{name} must be a finite number of seconds {bound} ({none} for no limit), not {shown}",
        op="timeout",
    )


#: Seconds the one-off check that bubblewrap can make a sandbox here may take (it takes ms).
BWRAP_PROBE_TIMEOUT_S = 10.0
