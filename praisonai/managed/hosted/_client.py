"""The ``anthropic`` client the hosted backend uses, and how the API's failures read to a user.

One ``AsyncAnthropic`` per ManagedAgent, made on the portal loop that uses it. Every call goes
through :func:`api_errors`, which turns the SDK's exceptions into praisonai's, one sentence each
naming the API by the base URL in use: no key, a refused key, the beta not enabled, a rate limit
or an overload (with when to retry), an unreachable API, or the API's own answer. A 404 is
:class:`SessionNotFoundError` naming what was missing; a cut stream (which the SDK raises bare, as
its HTTP library's error) is :class:`ProviderUnavailableError`.

The client's HTTP answers pass :mod:`._guard` first: an SSE frame past
``MAX_REMOTE_EVENT_BYTES`` (or a JSON answer past ``MAX_REMOTE_ANSWER_BYTES``) is refused while
it arrives (:class:`MalformedReplyError`), and a 429/529 whose ``retry-after`` is past
``RETRY_AFTER_CAP_S`` is not retried by the SDK (which would sleep whatever it says: an hour).
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final, TypeVar

from praisonai import _retry
from praisonai._errors import (
    AuthenticationError,
    ConfigError,
    MalformedReplyError,
    MissingDependencyError,
    ModelError,
    ProviderUnavailableError,
    SessionNotFoundError,
)
from praisonai._limits import RETRY_AFTER_CAP_S
from praisonai._retry import asked_to_wait, retry_after
from praisonai.managed.hosted._guard import guard, origin

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

#: Where the key may come from, in order (PraisonAI reads both).
KEY_VARIABLES: Final = ("ANTHROPIC_API_KEY", "CLAUDE_API_KEY")
#: The client's timeout for a request: the Managed Agents calls answer at once (a stream's wait
#: for events is bounded by the feed's read deadline, not by this).
REQUEST_TIMEOUT_S: Final = 60.0
#: Seconds to open a connection to the API.
CONNECT_TIMEOUT_S: Final = 5.0
_HTTP_LIBRARIES: Final = ("httpx", "httpx2")
T = TypeVar("T")


def api_key(explicit: str | None = None) -> str:
    """The key to use: ``explicit``, else the first of :data:`KEY_VARIABLES` set; ConfigError
    naming them otherwise."""
    key = explicit or next((os.environ[v] for v in KEY_VARIABLES if os.environ.get(v)), None)
    if not key:
        raise ConfigError(
            "the hosted backend (provider='anthropic') needs an Anthropic API key: set "
            "ANTHROPIC_API_KEY (or CLAUDE_API_KEY), or pass api_key=",
            op="managed",
        )
    return key


def make_client(key: str, base_url: str | None = None) -> AsyncAnthropic:
    """A new client (call it on the loop that will use it). ``base_url`` defaults to the SDK's
    (``ANTHROPIC_BASE_URL``, else api.anthropic.com)."""
    try:
        import anthropic
    except ImportError as exc:
        raise MissingDependencyError(
            "the hosted backend needs the anthropic SDK: pip install 'praisonai[llm]'", op="managed"
        ) from exc
    timeout = anthropic.Timeout(REQUEST_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)
    http = anthropic.DefaultAsyncHttpxClient(timeout=timeout, event_hooks={"response": [guard]})
    return anthropic.AsyncAnthropic(api_key=key, base_url=base_url, timeout=timeout, http_client=http)


def workspace_scope(base_url: str, key: str) -> str:
    """Where the remote agents and environments made with ``key`` at ``base_url`` live, as a
    fingerprint safe to store and show: 32 hex digits of a SHA-256 over a fixed label, the
    endpoint (without a trailing ``/``) and the key.

    The API does not say which workspace a key belongs to (its objects carry no workspace id),
    so the key stands for its workspace. The hash cannot give the key back (an API key is far too
    long to guess), and the label keeps it from matching any other use of a key's SHA-256. A new
    key of the same workspace gets a new scope: its first run finds the resources again through
    the API's list (by the config hash in their metadata, or the environment's name) instead of
    making them twice."""
    endpoint = base_url.strip().rstrip("/")
    material = b"\0".join((b"praisonai hosted scope v1", endpoint.encode(), key.encode()))
    return hashlib.sha256(material).hexdigest()[:32]


@contextmanager
def api_errors(what: str) -> Iterator[None]:
    """Translate the SDK's failures inside the block; ``what`` says what was being done
    (``"creating the agent"``, ``"session sesn_…"``)."""
    import anthropic

    try:
        yield
    except anthropic.AuthenticationError as exc:
        raise AuthenticationError(
            f"{what}: Anthropic refused the API key (check ANTHROPIC_API_KEY): {_message(exc)}",
            op="managed",
        ) from exc
    except anthropic.PermissionDeniedError as exc:
        raise AuthenticationError(
            f"{what}: the key may not use Claude Managed Agents (is the managed-agents beta enabled "
            f"for this organization?): {_message(exc)}",
            op="managed",
        ) from exc
    except anthropic.NotFoundError as exc:
        raise SessionNotFoundError(f"{what}: not found on the API: {_message(exc)}") from exc
    except anthropic.APIStatusError as exc:
        if exc.status_code in (429, 529):
            raise _limited(what, exc) from exc
        message = f"{what}: the API at {origin(exc)} answered {exc.status_code}: {_message(exc)}"
        raise ModelError(message, status=exc.status_code, op="managed") from exc
    except anthropic.APIConnectionError as exc:
        if isinstance(exc.__cause__, MalformedReplyError):  # an answer too large, refused as it came
            raise exc.__cause__ from exc
        message = f"{what}: the Anthropic API at {origin(exc)} did not answer: {exc}"
        raise ProviderUnavailableError(message, op="managed") from exc
    except _transport_errors() as exc:
        message = f"{what}: the connection to the API at {origin(exc)} broke: {exc!r}"
        raise ProviderUnavailableError(message, op="managed") from exc


def _limited(what: str, exc: Any) -> ModelError:
    """A 429 or 529 in one sentence: the limit, and when the API said to try again."""
    kind = "is rate limiting this key" if exc.status_code == 429 else "is overloaded"
    said = f"{what}: the Anthropic API at {origin(exc)} {kind} ({exc.status_code}: {_message(exc)})"
    return ModelError(f"{said}; {asked_to_wait(exc.response.headers)}", status=exc.status_code, op="managed")


async def at_most_once(
    client: AsyncAnthropic,
    what: str,
    send: Callable[[AsyncAnthropic], Awaitable[T]],
    lookup: Callable[[], Awaitable[T | None]],
    *,
    tries: int = 3,
) -> T:
    """``send`` (given a client without the SDK's retries: it sends no idempotency key, so its own
    retry of a 5xx whose effect happened makes the thing twice). When an answer is lost (no answer,
    a 5xx, or a 429), ``lookup()`` says whether the request took effect — its result, or ``None``
    — before it is sent again, after a backoff (``praisonai._retry``)."""
    once = client.with_options(max_retries=0)

    async def sent() -> T:
        with api_errors(what):
            return await send(once)

    async def took_effect() -> T | None:
        with api_errors(what):
            return await lookup()

    return await _retry.retried(
        sent,
        retry_if=_worth_retrying,
        attempts=tries,
        what=what,
        adopt=took_effect,
        wait_at_least=_asked_wait,
    )


def _worth_retrying(exc: BaseException) -> bool:
    """Transient, and not asked to wait past ``RETRY_AFTER_CAP_S``."""
    return (
        isinstance(exc, ModelError | ProviderUnavailableError)
        and transient(exc)
        and _asked_wait(exc) <= RETRY_AFTER_CAP_S
    )


def _asked_wait(exc: BaseException) -> float:
    """The ``retry-after`` the answer behind ``exc`` asked for (0 when none)."""
    response = getattr(exc.__cause__, "response", None)
    wait = retry_after(response.headers) if response is not None else None
    return wait or 0.0


def transient(exc: ModelError | ProviderUnavailableError) -> bool:
    """Worth another try: no answer, a 5xx (the API's or a proxy's), or a rate limit."""
    status = getattr(exc, "status", None)
    return isinstance(exc, ProviderUnavailableError) or status is None or status >= 500 or status == 429


def status_of(exc: BaseException) -> int | None:
    """The HTTP status behind a translated error (``None`` when there was no answer)."""
    cause: Any = exc.__cause__
    return getattr(cause, "status_code", None)


def _message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
    return str(getattr(exc, "message", exc))


def _transport_errors() -> tuple[type[Exception], ...]:
    """The SDK wraps transport errors only until a response starts: a stream cut later raises
    its HTTP library's error bare (httpx2's RemoteProtocolError, for one)."""
    modules = (sys.modules.get(name) for name in _HTTP_LIBRARIES)
    return tuple(module.TransportError for module in modules if module is not None)
