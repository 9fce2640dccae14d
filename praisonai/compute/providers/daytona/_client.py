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
    ConfigError,
    ExecError,
    InstanceNotFoundError,
    PathNotFoundError,
    PraisonAIError,
    ProviderUnavailableError,
)

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
def translated(op: str, *, instance_id: str | None = None, path: str | None = None) -> Iterator[None]:
    """Turn the SDK's exceptions into ours, one sentence each, ``raise … from exc``."""
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

    _telemetry.vendor_call("daytona", op, instance_id or path)
    try:
        yield
    except PraisonAIError:
        raise
    except DaytonaFileNotFoundError as exc:
        raise PathNotFoundError(f"no such file in the Daytona sandbox: {path}", op=op) from exc
    except DaytonaNotFoundError as exc:
        if path is not None:
            raise PathNotFoundError(f"no such file in the Daytona sandbox: {path}", op=op) from exc
        raise InstanceNotFoundError(f"no Daytona sandbox for instance {instance_id!r}", op=op) from exc
    except (DaytonaAuthenticationError, DaytonaForbiddenError) as exc:
        raise AuthenticationError(
            f"Daytona refused the credential ({exc}); check DAYTONA_API_KEY and its organisation", op=op
        ) from exc
    except DaytonaRateLimitError as exc:
        raise ProviderUnavailableError(
            f"Daytona is rate limiting this key ({exc}); retry later or lower the concurrency", op=op
        ) from exc
    except DaytonaConnectionError as exc:
        raise ProviderUnavailableError(
            f"Daytona could not be reached ({exc}); check DAYTONA_API_URL and the network", op=op
        ) from exc
    except DaytonaValidationError as exc:
        raise ConfigError(f"Daytona rejected the request: {exc}", op=op) from exc
    except DaytonaError as exc:
        status = getattr(exc, "status_code", None)
        if status is not None and status >= 500:
            raise ProviderUnavailableError(
                f"Daytona failed on its side ({exc}); retry later or check status.daytona.io", op=op
            ) from exc
        raise ExecError(f"Daytona failed: {exc}", op=op) from exc
