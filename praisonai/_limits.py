"""Every default limit in one place. Change a number here, not at a call site."""

from __future__ import annotations

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

#: Seconds one package-manager run or one setup command may take while provisioning.
SETUP_TIMEOUT_S = 900.0
