"""The Daytona SDK at the boundary: one client per operation, and its errors as ours.

``daytona`` is imported here and in the package only, lazily (lint-imports keeps it there).
A client is opened per operation (``async with``): the SDK's aiohttp session belongs to the
event loop that made it, and a provider is used from several loops (threads, portals).
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import AsyncIterator, Iterator
from typing import Any

from praisonai import _telemetry
from praisonai._errors import (
    AuthenticationError,
    ChannelClosedError,
    ConfigError,
    ExecError,
    InstanceNotFoundError,
    PathNotFoundError,
    PraisonAIError,
    ProviderUnavailableError,
)
from praisonai._retry import asked_to_wait

#: The credential variables the SDK reads (cloud-sdks.md §3.1).
KEY_VARS = ("DAYTONA_API_KEY", "DAYTONA_JWT_TOKEN")


def missing_credentials(api_key: str | None) -> str | None:
    """One sentence naming the variable to set, or ``None`` when a credential is there."""
    if api_key or any(os.environ.get(v) for v in KEY_VARS):
        return None
    return "Daytona needs an API key: set DAYTONA_API_KEY (or DAYTONA_JWT_TOKEN with DAYTONA_ORGANIZATION_ID)"


@contextlib.asynccontextmanager
async def client(api_key: str | None, api_url: str | None, target: str | None) -> AsyncIterator[Any]:
    """An ``AsyncDaytona``, closed afterwards; its errors translated (see :func:`translated`)."""
    from daytona import AsyncDaytona, DaytonaConfig

    reason = missing_credentials(api_key)
    if reason:
        raise AuthenticationError(reason, op="daytona")
    config = DaytonaConfig(api_key=api_key, api_url=api_url, target=target, use_deprecated_polling=True)
    with translated("connect"), warnings.catch_warnings():
        # Polling, not the socket.io event stream: a client lives for one operation here, and the
        # stream would open a websocket per operation only to wait for state changes.
        warnings.simplefilter("ignore", DeprecationWarning)
        sdk = AsyncDaytona(config)
    try:
        with translated("daytona"):
            yield sdk
    finally:
        await sdk.close()  # type: ignore[no-untyped-call]


@contextlib.contextmanager
def answer_lost(op: str) -> Iterator[None]:
    """Inside :func:`translated`, around a call that is not idempotent (an exec): its answer lost
    after the request left (the connection cut or timed out once sent, a 5xx of the daemon or a
    proxy) is ``ChannelClosedError``: the command may have run, and it is not sent again. A
    connection that never opened stays "could not be reached" (the command never ran)."""
    from daytona import DaytonaConnectionError, DaytonaError

    try:
        yield
    except DaytonaConnectionError as exc:
        if _never_connected(exc):
            raise
        raise _may_have_run(op, exc) from exc
    except DaytonaError as exc:
        status = getattr(exc, "status_code", None)
        if status is None or status < 500:
            raise
        raise _may_have_run(op, exc) from exc


def _never_connected(exc: BaseException) -> bool:
    """The error chain holds aiohttp's "could not connect" (the request never left)."""
    seen: BaseException | None = exc
    while seen is not None:
        if type(seen).__name__ in (
            "ClientConnectorError",
            "ClientConnectorDNSError",
            "ConnectionRefusedError",
        ):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _may_have_run(op: str, exc: BaseException) -> ChannelClosedError:
    return ChannelClosedError(
        f"Daytona's answer to {op} was lost after the request was sent ({exc}): the command may have "
        "run; it was not sent again",
        op=op,
        sent=True,
    )


@contextlib.contextmanager
def translated(op: str, *, instance_id: str | None = None, path: str | None = None) -> Iterator[None]:
    """Turn the SDK's exceptions into ours, one sentence each, ``raise … from exc``; an
    ``ExceptionGroup`` holding one error (a task group's) is that error, translated."""
    _telemetry.vendor_call("daytona", op, instance_id or path)
    try:
        yield
    except PraisonAIError:
        raise
    except Exception as exc:
        inner = getattr(exc, "exceptions", None)
        error = inner[0] if isinstance(inner, tuple) and len(inner) == 1 else exc
        ours = error if isinstance(error, PraisonAIError) else _ours(error, op, instance_id, path)
        if ours is None:
            raise
        raise ours from error


def _ours(exc: BaseException, op: str, instance_id: str | None, path: str | None) -> PraisonAIError | None:
    """One of the SDK's errors as ours; None for anything else."""
    from daytona import (
        DaytonaAuthenticationError,
        DaytonaConnectionError,
        DaytonaError,
        DaytonaFileNotFoundError,
        DaytonaForbiddenError,
        DaytonaNotFoundError,
        DaytonaRateLimitError,
        DaytonaValidationError,
    )

    if isinstance(exc, DaytonaFileNotFoundError) or (isinstance(exc, DaytonaNotFoundError) and path):
        return PathNotFoundError(f"no such file in the Daytona sandbox: {path}", op=op)
    if isinstance(exc, DaytonaNotFoundError):
        return InstanceNotFoundError(f"no Daytona sandbox for instance {instance_id!r}", op=op)
    if isinstance(exc, DaytonaAuthenticationError | DaytonaForbiddenError):
        return AuthenticationError(
            f"Daytona refused the credential ({exc}); check DAYTONA_API_KEY and its organisation", op=op
        )
    if isinstance(exc, DaytonaRateLimitError):
        waited = asked_to_wait({str(k).lower(): str(v) for k, v in (exc.headers or {}).items()})
        return ProviderUnavailableError(
            f"Daytona is rate limiting this key ({exc}); {waited}, or lower the concurrency", op=op
        )
    if isinstance(exc, DaytonaConnectionError):
        return ProviderUnavailableError(
            f"Daytona could not be reached ({exc}); check DAYTONA_API_URL and the network", op=op
        )
    if isinstance(exc, DaytonaValidationError):
        return ConfigError(f"Daytona rejected the request: {exc}", op=op)
    if isinstance(exc, DaytonaError):
        status = getattr(exc, "status_code", None)
        if status is not None and status >= 500:
            return ProviderUnavailableError(
                f"Daytona failed on its side ({exc}); retry later or check status.daytona.io", op=op
            )
        return ExecError(f"Daytona failed: {exc}", op=op)
    return None
