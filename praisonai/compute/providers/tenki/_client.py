"""The Tenki SDK at the boundary: one client per event loop, retries, and its errors as ours.

``tenki`` is imported here and in the package only, lazily (lint-imports keeps it there). A
client (:class:`Held`) is kept per running event loop, since its grpc.aio channel belongs to the
loop that made it, with the sandbox handles it found: a handle carries its data-plane endpoint and
credential (renewed by the SDK), so a second command on an instance is one vendor call, not three
(find, credential, run). It is released with ``AsyncClient.close()`` (the channel only), at exit
through the portal. Never ``AsyncSandbox.close()`` to release anything: it TERMINATES the sandbox
(``terminate = close`` in the wheel).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import weakref
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

from praisonai import _portal, _retry, _telemetry
from praisonai._errors import (
    AuthenticationError,
    ConfigError,
    ExecError,
    InstanceNotFoundError,
    PathNotFoundError,
    PraisonAIError,
    ProviderUnavailableError,
)

#: The credential variables the SDK reads, in its order (cloud-sdks.md §4.1).
KEY_VARS = ("TENKI_AUTH_TOKEN", "TENKI_API_KEY")
ATTEMPTS = 5
_T = TypeVar("_T")


def missing_credentials(api_key: str | None) -> str | None:
    """One sentence naming what to set when there is no usable key, else ``None``."""
    key = (api_key or "").strip() or next((os.environ[v] for v in KEY_VARS if os.environ.get(v)), "")
    if not key:
        return (
            "the tenki provider needs an API key: set TENKI_API_KEY (or TENKI_AUTH_TOKEN) to a key "
            "of your Tenki workspace (it starts with tk_; the workspace is the key's)"
        )
    if not key.startswith("tk_"):
        return "the Tenki API key in TENKI_API_KEY / TENKI_AUTH_TOKEN must start with tk_; check the value"
    return None


class Held:
    """One loop's ``AsyncClient`` and the sandbox handles found through it, by instance id."""

    def __init__(self, sdk: Any) -> None:
        self.sdk = sdk
        self.boxes: dict[str, Any] = {}

    async def aclose(self) -> None:
        self.boxes.clear()
        await self.sdk.close()  # the channel; no sandbox is touched


class Clients:
    """A :class:`Held` per running event loop (weakly keyed: a closed loop's goes with it)."""

    def __init__(self, api_key: str | None, base_url: str | None) -> None:
        self._key, self._url = api_key, base_url
        self._held: weakref.WeakKeyDictionary[Any, Held] = weakref.WeakKeyDictionary()

    def here(self) -> Held:
        if reason := missing_credentials(self._key):
            raise AuthenticationError(reason, op="connect")
        loop = asyncio.get_running_loop()
        held = self._held.get(loop)
        if held is None:
            from tenki import AsyncClient

            with translated("connect"):
                held = Held(AsyncClient(api_key=self._key or None, base_url=self._url or None))
            self._held[loop] = held
            _portal.close_at_exit(held)  # on the portal's loop, closed before it stops
        return held


def is_retryable(exc: BaseException) -> bool:
    """A rate limit (RESOURCE_EXHAUSTED "rate limit", Tenki's 429) or UNAVAILABLE (what gRPC makes
    of a gateway's 502/503/504), which the SDK marks ``retryable`` but does not retry itself.

    INTERNAL is not retried: the SDK re-raises its mapped error ``from`` itself, so the gRPC code
    of a plain ``SandboxError`` is lost and INTERNAL cannot be told from, say, ALREADY_EXISTS.
    """
    from tenki import RateLimitedError, SandboxError

    return isinstance(exc, RateLimitedError) or (isinstance(exc, SandboxError) and exc.retryable)


async def retried(op: str, call: Callable[[], Awaitable[_T]]) -> _T:
    """``call()`` retried (``praisonai._retry``) on :func:`is_retryable` errors, translated at the
    end. Only for calls that are safe to repeat (reads, terminate; create adopts, see the provider)."""
    with translated(op):
        return await _retry.retried(call, retry_if=is_retryable, attempts=ATTEMPTS, what=f"tenki {op}")


@contextlib.contextmanager
def translated(op: str, *, instance_id: str | None = None, path: str | None = None) -> Iterator[None]:
    """Turn the SDK's exceptions into ours, one sentence each, ``raise … from exc``."""
    import tenki

    _telemetry.vendor_call("tenki", op, instance_id or path)
    try:
        yield
    except PraisonAIError:
        raise
    except tenki.FileNotFoundError as exc:
        raise PathNotFoundError(f"no such file in the Tenki sandbox: {path}", op=op) from exc
    except (tenki.SessionNotFoundError, tenki.SessionTerminatedError) as exc:
        raise InstanceNotFoundError(f"no Tenki sandbox for instance {instance_id!r}", op=op) from exc
    except (tenki.MissingAuthTokenError, tenki.InvalidAuthTokenError) as exc:
        raise AuthenticationError(f"{exc}; set TENKI_API_KEY (or TENKI_AUTH_TOKEN)", op=op) from exc
    except (tenki.UnauthorizedError, tenki.PermissionDeniedError) as exc:
        raise AuthenticationError(
            f"Tenki refused the API key ({exc}); check TENKI_API_KEY and its workspace", op=op
        ) from exc
    except tenki.RateLimitedError as exc:
        raise ProviderUnavailableError(
            f"Tenki is rate limiting this key ({exc}); retry later or lower the concurrency", op=op
        ) from exc
    except tenki.QuotaExceededError as exc:
        raise ProviderUnavailableError(f"the Tenki workspace is out of quota: {exc}", op=op) from exc
    except (tenki.InvalidResourceConfigError, ValueError) as exc:
        raise ConfigError(f"Tenki rejected the request: {exc}", op=op) from exc
    except tenki.SandboxError as exc:
        if is_retryable(exc):
            raise ProviderUnavailableError(
                f"Tenki failed on its side ({exc}); retry later or check its status page", op=op
            ) from exc
        raise ExecError(f"Tenki failed during {op}: {exc}", op=op) from exc
