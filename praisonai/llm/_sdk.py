"""What the two SDK adapters share: how an SDK's failures become praisonai's errors.

Takes the SDK module as a value, so that it imports neither SDK (each is imported by its adapter only).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from praisonai import _telemetry
from praisonai._errors import AuthenticationError, ModelError, PraisonAIError, ProviderUnavailableError
from praisonai._limits import ERROR_DETAIL_CHARS
from praisonai._retry import LIMITED, asked_to_wait

# The HTTP libraries the SDKs are built on (openai on httpx, recent anthropic on httpx2).
_HTTP_LIBRARIES = ("httpx", "httpx2")


@contextmanager
def sdk_errors(sdk: Any, where: str) -> Iterator[None]:
    """Raise ProviderUnavailableError for a connection that fails (refused, timed out, or broken while
    a streamed reply is read), AuthenticationError for a refused key and ModelError for any other
    error status; ``where`` names the model
    and endpoint. ``sdk`` is the ``openai`` or ``anthropic`` module (they name these errors alike).
    The call is an OpenTelemetry span ``praisonai.model`` (not made current: a streamed reply is
    read inside a generator).
    """
    with _telemetry.span("model", {"praisonai.model": where}, current=False), _translated(sdk, where):
        yield


@contextmanager
def _translated(sdk: Any, where: str) -> Iterator[None]:
    try:
        yield
    except sdk.APIConnectionError as exc:  # includes timeouts
        if isinstance(exc.__cause__, PraisonAIError):  # ours, from the reply's bytes (see _bounds)
            raise exc.__cause__ from None
        raise ProviderUnavailableError(f"{where}: {exc}", op="model") from exc
    except sdk.AuthenticationError as exc:
        raise AuthenticationError(f"{where} refused the API key: {exc}", op="model") from exc
    except sdk.APIStatusError as exc:  # after the SDK's own retries
        if exc.status_code < 300:  # an error event in a streamed reply (anthropic)
            raise _error_event(where, exc) from exc
        if exc.status_code in LIMITED:
            kind = "is rate limiting this key" if exc.status_code == 429 else "is overloaded"
            raise ModelError(
                f"{where} {kind} ({exc.status_code}); {asked_to_wait(exc.response.headers)}",
                status=exc.status_code,
            ) from exc
        raise ModelError(
            f"{where} answered {exc.status_code}: {exc.message}", status=exc.status_code
        ) from exc
    except sdk.APIError as exc:  # an error event in a streamed reply (openai)
        raise _error_event(where, exc) from exc
    except _transport_errors() as exc:
        raise ProviderUnavailableError(
            f"{where}: the connection broke during the reply: {exc}", op="model"
        ) from exc


def _error_event(where: str, exc: Any) -> ModelError:
    """A reply that started (HTTP 200) and then reported an error in its stream: it is not
    retried here (part of the reply may have been shown); the status says it started."""
    message = " ".join(str(exc.message).split())[:ERROR_DETAIL_CHARS]
    return ModelError(f"{where} reported an error in the middle of its reply: {message}", status=200)


def _transport_errors() -> tuple[type[Exception], ...]:
    """The transport errors of the HTTP libraries loaded: the SDKs wrap them in APIConnectionError
    only until the response starts, so a stream that breaks later raises them bare."""
    modules = (sys.modules.get(name) for name in _HTTP_LIBRARIES)
    return tuple(module.TransportError for module in modules if module is not None)
