"""The one error tree. Every error praisonai raises on purpose derives from :class:`PraisonAIError`.

Leaves also inherit the builtin a Python programmer would catch, so ``except TimeoutError`` or
``except FileNotFoundError`` keep working::

    PraisonAIError
    ├── ConfigError (ValueError)                 a value the user wrote is invalid
    │   ├── EnvironmentFileError                 .praisonai/environment.yaml is invalid; lists every problem
    │   ├── UnknownProviderError                 no provider by that name; lists the known ones
    │   ├── UnsupportedFeatureError              the provider cannot honour a requested field
    │   └── InvalidInstanceIdError               not an instance id (``<provider>_<12 hex>``)
    ├── MissingDependencyError (ImportError)     an optional SDK is absent; names the pip extra
    ├── ProviderUnavailableError (ConnectionError)   the engine/daemon/host does not answer
    ├── HomeUnusableError (OSError)              PRAISONAI_HOME or its ledger cannot be used
    ├── DiskFullError (OSError)                  no space left where an instance's files are written
    ├── HostKeyError (ConnectionError)           an SSH host's key is unknown or does not match
    ├── AuthenticationError (PermissionError)    the host refused every credential offered
    ├── ImageNotFoundError (LookupError)         the image is absent and cannot be pulled
    ├── InstanceNotFoundError (LookupError)      no instance with that id
    ├── ModelError (RuntimeError)                the model's API answered a request with an error
    ├── RemoteTimeoutError (TimeoutError)        a model or hosted stream sent nothing for turn_timeout_s
    ├── MalformedReplyError (ValueError)         a remote sent data its protocol does not allow
    ├── IncompleteReplyError (RuntimeError)      a model's reply ended before it was complete
    ├── SessionNotFoundError (LookupError)       no managed session (or agent) with that id
    ├── SessionBusyError (RuntimeError)          another live process drives that session
    ├── StaleSessionError (RuntimeError)         this process's lease on a session was taken over
    ├── ManagedSessionError (RuntimeError)       a hosted session failed for good (session.error)
    ├── SandboxClosedError (RuntimeError)        a handle used after close()
    ├── ProvisionError (RuntimeError)            creating the instance or its setup failed
    ├── ExecError (RuntimeError)                 the exec machinery failed (not a non-zero exit)
    │   └── CommandFailedError                   check=True and the command exited non-zero
    ├── CommandTimeoutError (TimeoutError)       check=True and the command hit its timeout
    ├── PathNotFoundError (FileNotFoundError)    a file or working directory is missing
    ├── PathOutsideWorkspaceError (PermissionError)  a path escapes the instance workspace
    └── ForeignInstanceError (PermissionError)   the instance belongs to another praisonai home
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from praisonai._types import ExecResult


class PraisonAIError(Exception):
    """Root of every praisonai error.

    Attributes:
        op: the operation that failed ("provision", "exec", "read_file", ...), when known.
        retryable: True when the same call may succeed later unchanged.
    """

    retryable: bool = False

    def __init__(self, message: str, *, op: str | None = None) -> None:
        super().__init__(message)
        self.op = op


class ConfigError(PraisonAIError, ValueError):
    """A configuration value is invalid."""


class EnvironmentFileError(ConfigError):
    """An environment file is unreadable, not YAML, or not a valid definition.

    ``problems`` holds one line per problem, each ``file:line: key: what is wrong and what is
    allowed``; the message is those lines, joined by newlines.
    """

    def __init__(self, path: str | os.PathLike[str], problems: Sequence[str]) -> None:
        super().__init__("\n".join(problems), op="environment")
        self.path = os.fspath(path)
        self.problems = tuple(problems)


class UnknownProviderError(ConfigError):
    """No compute provider is registered under that name."""


class UnsupportedFeatureError(ConfigError):
    """The provider cannot honour a requested field; it is rejected rather than dropped."""


class InvalidInstanceIdError(ConfigError):
    """A string that is not an instance id of the provider (``<provider>_<12 hex digits>``).

    Refused before any file, container or process is touched: an id names a host directory
    (local), a container (docker) or a remote directory (ssh).
    """


class MissingDependencyError(PraisonAIError, ImportError):
    """An optional SDK is not installed; the message names the pip extra."""


class ProviderUnavailableError(PraisonAIError, ConnectionError):
    """The provider's engine, daemon or host does not answer."""

    retryable = True


class HomeUnusableError(PraisonAIError, OSError):
    """``PRAISONAI_HOME``, or the ledger in it, cannot be used: not a directory, not writable, or
    not a database. The message names the path and what to do; nothing there was changed."""


class DiskFullError(PraisonAIError, OSError):
    """The disk under a local instance's workspace is full: the file was not written (any earlier
    content is kept). The message names the path and what to do."""


class HostKeyError(PraisonAIError, ConnectionError):
    """An SSH host presented a key that is not in known_hosts, or that differs from the one there.

    Never retried: a changed key may be a man-in-the-middle.
    """


class AuthenticationError(PraisonAIError, PermissionError):
    """The host refused every credential offered (the message lists what was tried)."""


class ImageNotFoundError(PraisonAIError, LookupError):
    """The image is not present and could not be pulled."""


class InstanceNotFoundError(PraisonAIError, LookupError):
    """No instance with that id exists (any more)."""


class ModelError(PraisonAIError, RuntimeError):
    """The model's API answered with an error status after the SDK's own retries (a bad request,
    an unknown model, a rate limit or an outage); ``status`` is the HTTP status."""

    def __init__(self, message: str, *, status: int, op: str | None = "model") -> None:
        super().__init__(message, op=op)
        self.status = status
        self.retryable = status == 429 or status >= 500


class RemoteTimeoutError(PraisonAIError, TimeoutError):
    """A remote (a model's API, the hosted Managed Agents API) sent nothing that moves the turn on
    for ``turn_timeout_s`` seconds (keep-alives do not count): no first byte, a stream gone silent.
    The message names the remote by its base URL and the deadline; the session is kept."""

    retryable = True


class MalformedReplyError(PraisonAIError, ValueError):
    """A remote sent data its protocol does not allow: an event that is not JSON, a field of the
    wrong type, an event past the size cap. The message names the remote by its base URL (the one
    in use: ``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL`` or ``base_url=``) and what was wrong."""


class IncompleteReplyError(PraisonAIError, RuntimeError):
    """A model's streamed reply ended before it was complete: its stream closed before its end
    (no ``finish_reason``/``[DONE]``, no ``message_stop``), it carried no choices, or it was cut at
    the output token limit. ``partial`` is the text that did arrive (kept in the session's
    transcript, marked partial); tool calls of such a reply are never run."""

    def __init__(self, message: str, *, partial: str = "", op: str | None = "model") -> None:
        super().__init__(message, op=op)
        self.partial = partial


class SessionNotFoundError(PraisonAIError, LookupError):
    """No managed session (or stored agent) with that id."""


class SessionBusyError(PraisonAIError, RuntimeError):
    """Another live process holds the session's lease (it is running a turn); the message names it."""


class StaleSessionError(PraisonAIError, RuntimeError):
    """This process's lease on a session was taken over by another (it must stop writing)."""


class ManagedSessionError(PraisonAIError, RuntimeError):
    """A hosted session reported an error it will not retry (``session.error`` whose retry status
    is ``exhausted`` or ``terminal``), or an answer the hosted API refused. ``error_type`` is the
    API's error type, ``retry_status`` its retry status; the event is in the session's log."""

    def __init__(
        self,
        message: str,
        *,
        error_type: str = "unknown_error",
        retry_status: str = "terminal",
        op: str | None = "managed",
    ) -> None:
        super().__init__(message, op=op)
        self.error_type = error_type
        self.retry_status = retry_status


class ProcessNotFoundError(PraisonAIError, LookupError):
    """No background process with that id in the instance."""


class LockTimeoutError(PraisonAIError, TimeoutError):
    """Another process held a lock of this home past the wait; the message names it."""

    retryable = True


class SandboxClosedError(PraisonAIError, RuntimeError):
    """The sandbox handle was used after it was closed."""


class ProvisionError(PraisonAIError, RuntimeError):
    """Creating an instance, installing its packages or running its setup failed."""


class ExecError(PraisonAIError, RuntimeError):
    """The exec machinery itself failed (the command never ran or its result was lost)."""

    retryable = True


class ChannelClosedError(ExecError):
    """The exec channel into the instance closed (helper killed, instance restarted or removed).

    ``sent`` is False when the request never reached the helper, so repeating it is safe (it is
    then ``retryable``); with ``sent`` True the command may have run, and repeating it could run
    it twice, so it is not. The next call opens a new channel by itself.
    """

    def __init__(self, message: str, *, op: str | None = None, sent: bool = True) -> None:
        super().__init__(message, op=op)
        self.sent = sent
        self.retryable = not sent


class CommandFailedError(ExecError):
    """Raised by ``exec(..., check=True)`` when the command exits non-zero; carries the result."""

    retryable = False

    def __init__(self, result: ExecResult, command: str) -> None:
        super().__init__(f"command exited {result.exit_code}: {command}", op="exec")
        self.result = result


class CommandTimeoutError(PraisonAIError, TimeoutError):
    """Raised by ``exec(..., check=True)`` when the command timed out; carries the partial result."""

    def __init__(self, result: ExecResult, command: str) -> None:
        super().__init__(f"command timed out: {command}", op="exec")
        self.result = result


class PathNotFoundError(PraisonAIError, FileNotFoundError):
    """A file, directory or working directory does not exist in the instance."""


class PathOutsideWorkspaceError(PraisonAIError, PermissionError):
    """A path resolves outside the instance workspace; the operation was refused."""


class ForeignInstanceError(PraisonAIError, PermissionError):
    """The instance was made by another ``PRAISONAI_HOME`` (its ``praisonai.home`` label is not
    this home's): it is not resumed, connected to or run in from here. Removing it is allowed
    (``compute stop``)."""
