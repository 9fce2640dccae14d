"""The Fly Machines REST API at the boundary: one httpx client per provider and event loop,
retries with backoff, and Fly's errors as ours.

Fly has no SDK (cloud-sdks.md §5); ``httpx`` is imported here and in the package only, lazily.
An ``AsyncClient`` belongs to the event loop that made it (its connection pool does), and a
provider is used from several loops (portals, threads), so the client is kept per loop.
Rate limits are per action and per machine (1 req/s, burst 3): 429 and 5xx are retried with
the wait a ``retry-after``, ``ratelimit-reset`` or ``x-ratelimit-reset`` header gives (Fly
documents no header: these are the common ones), else the shared backoff (``praisonai._retry``). A request
that is not idempotent (``exec``) is retried on 429 only, which Fly answers before doing
anything, and on a connection that never opened; its answer lost after it was sent (the
connection cut, a 5xx) is :class:`ChannelClosedError`: it may have run, and it is not sent again.
HTTP/2 is offered when ``h2`` is installed (the ``flyio`` extra brings
``httpx[http2]``): api.machines.dev negotiates it over TLS, so concurrent requests share one
connection; a plain-http URL (the fake, ``_api.internal``) stays HTTP/1.1.
"""

from __future__ import annotations

import contextlib
import datetime
import importlib.util
import os
import time
import weakref
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from praisonai import _portal, _retry, _telemetry
from praisonai._errors import (
    AuthenticationError,
    ChannelClosedError,
    ConfigError,
    ExecError,
    InstanceNotFoundError,
    ProviderUnavailableError,
)
from praisonai._limits import RETRY_AFTER_CAP_S, RETRY_CAP_S

if TYPE_CHECKING:
    import httpx

DEFAULT_URL = "https://api.machines.dev"
RETRIES = 5
NONCE_HEADER = "fly-machine-lease-nonce"  # a lease holder's mutations carry its nonce
#: Headers that say when a rate limit resets, in seconds, after ``retry-after``.
_RESET_HEADERS = ("retry-after", "ratelimit-reset", "x-ratelimit-reset")


def http2_available() -> bool:
    """Whether httpx can speak HTTP/2 here (``h2`` installed)."""
    return importlib.util.find_spec("h2") is not None


LEASE_TTL_S = 30  # a lease left by a client that died frees itself this soon
LEASE_WAIT_S = 60.0  # how long a mutation waits for another holder's lease to go


@dataclass
class Lease:
    """A machine lease held for a block of mutations: send ``nonce`` with each; set ``done`` once
    the machine is destroyed (its lease went with it: no release call)."""

    nonce: str
    done: bool = False


def missing_credentials(token: str | None, app: str | None) -> str | None:
    """One sentence naming what to set, or ``None`` when the token and the app are there."""
    if not (token or os.environ.get("FLY_API_TOKEN")):
        return "Fly.io needs an API token: set FLY_API_TOKEN (fly tokens create deploy -a APP)"
    if not (app or os.environ.get("FLY_APP_NAME")):
        return "Fly.io needs an app for its machines: set FLY_APP_NAME (or FlyCompute(app=...))"
    return None


class FlyAPI:
    """``/v1`` requests with the bearer token; one ``httpx.AsyncClient`` per running event loop."""

    def __init__(self, token: str | None, base_url: str | None) -> None:
        self._token = token
        self._base_url = (base_url or os.environ.get("FLY_API_HOSTNAME") or DEFAULT_URL).rstrip("/")
        self._clients: weakref.WeakKeyDictionary[Any, httpx.AsyncClient] = weakref.WeakKeyDictionary()
        self.calls = 0  # requests sent, retries included (for the benchmark's calls per operation)

    def _client(self) -> httpx.AsyncClient:
        import asyncio

        import httpx

        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            token = self._token or os.environ.get("FLY_API_TOKEN", "")
            client = httpx.AsyncClient(
                base_url=self._base_url + "/v1",
                headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
                timeout=httpx.Timeout(90.0, connect=15.0),
                http2=http2_available(),
            )
            self._clients[loop] = client
            _portal.close_at_exit(client)  # on the portal's loop, closed before it stops
        return client

    async def aclose(self) -> None:
        """Close this loop's client (a provider dropped early; the portal closes the rest at exit)."""
        import asyncio

        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            _portal.forget_at_exit(client)
            await client.aclose()

    async def request(
        self,
        method: str,
        path: str,
        *,
        op: str,
        body: Any = None,
        params: Mapping[str, str] | None = None,
        allow: tuple[int, ...] = (),
        idempotent: bool = True,
        nonce: str | None = None,
    ) -> httpx.Response:
        """Send one request (retried as the module docstring says); a status in ``allow`` is
        returned to the caller, any other error raised as ours (:func:`raise_for`). ``nonce``:
        the machine lease this mutation is made under."""
        import httpx

        headers = {NONCE_HEADER: nonce} if nonce else None
        _telemetry.vendor_call("flyio", op, f"{method} {path}")
        for attempt in range(RETRIES + 1):
            self.calls += 1
            try:
                response = await self._client().request(
                    method, path, json=body, params=params, headers=headers
                )
            except httpx.TransportError as exc:
                # no connection (or none free): the request provably never reached Fly, sent again
                unsent = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout)
                if attempt < RETRIES and (idempotent or unsent):
                    await anyio.sleep(_backoff(attempt, None))
                    continue
                if not (idempotent or unsent):
                    raise _may_have_run(op, repr(exc)) from exc
                raise ProviderUnavailableError(
                    f"Fly.io could not be reached ({exc!r}); check FLY_API_HOSTNAME and the network", op=op
                ) from exc
            status = response.status_code
            retry = status == 429 or (status >= 500 and idempotent)
            asked = _asked_wait(response.headers)
            if status == 429 and asked is not None and asked > RETRY_AFTER_CAP_S:
                retry = False  # not slept through, not asked again before its time: said at once
            if retry and attempt < RETRIES:
                await anyio.sleep(_backoff(attempt, _reset_after(response.headers)))
                continue
            if status < 400 or status in allow:
                return response
            if status >= 500 and not idempotent:
                raise _may_have_run(op, f"it answered {status}: {_said(response)}")
            raise_for(response, op)
        raise AssertionError("unreachable")  # the loop returns or raises

    @asynccontextmanager
    async def lease(self, app: str, machine_id: str, *, op: str) -> AsyncIterator[Lease | None]:
        """Hold the machine's lease for the block (``None``: the machine is gone, 404).

        Fly serialises mutations by lease: a stop or delete by someone else (another process's
        shutdown, flyctl) while we hold it is refused, and ours wait for theirs. Another holder's
        lease (409) is waited out for ``LEASE_WAIT_S``, then one sentence. A taken lease whose
        answer was lost looks like another holder's and frees itself after ``LEASE_TTL_S``.
        """
        path = f"/apps/{app}/machines/{machine_id}/lease"
        body = {"ttl": LEASE_TTL_S, "description": "praisonai: stop and destroy"}
        with anyio.move_on_after(LEASE_WAIT_S):
            while (
                got := await self.request("POST", path, op=op, body=body, allow=(404, 409))
            ).status_code == 409:
                await anyio.sleep(1.0)
        if got.status_code == 409:
            raise ProviderUnavailableError(
                f"the Fly machine {machine_id} is leased by another client ({_said(got)}); "
                "try again once its lease expires",
                op=op,
            )
        if got.status_code == 404:
            yield None
            return
        held = Lease(str(got.json()["data"]["nonce"]))
        try:
            yield held
        finally:
            if not held.done:
                # Unreleased, it expires in LEASE_TTL_S: not worth hiding the block's own outcome.
                with contextlib.suppress(ProviderUnavailableError):
                    await self.request("DELETE", path, op=op, allow=(404, 409), nonce=held.nonce)


def _may_have_run(op: str, how: str) -> ChannelClosedError:
    """A request that is not idempotent (an exec) reached Fly but its answer was lost: it may have
    taken effect, so it is not sent again (at most once) and the caller is told so."""
    return ChannelClosedError(
        f"Fly.io's answer to {op} was lost after the request was sent ({how}): the command may have "
        "run; it was not sent again",
        op=op,
        sent=True,
    )


def _at(seconds: float) -> str:
    """The wall-clock time ``seconds`` from now, ``15:04:05 UTC``."""
    moment = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=min(seconds, 1e8))
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC" if seconds >= 86400 else "%H:%M:%S UTC")


def _said(response: httpx.Response) -> str:
    """Fly's error text from an answer."""
    try:
        return str(response.json().get("error") or response.text)
    except ValueError:
        return response.text


def _reset_after(headers: Mapping[str, str]) -> str | None:
    """The first rate-limit reset header's value (seconds), if any."""
    return next((headers[h] for h in _RESET_HEADERS if h in headers), None)


def _backoff(attempt: int, retry_after: str | None) -> float:
    """What Fly's reset header says (capped), else the shared backoff (``praisonai._retry``)."""
    wait = _seconds(retry_after)
    return _retry.backoff(attempt) if wait is None else min(RETRY_CAP_S, wait)


def _seconds(retry_after: str | None) -> float | None:
    """A reset header's value in seconds from now (it may be an epoch time); None for none, or an
    HTTP date."""
    if not retry_after:
        return None
    try:
        wait = float(retry_after)
    except ValueError:
        return None
    if wait > 1e9:  # an epoch time, as some x-ratelimit-reset headers give
        wait -= time.time()
    return max(0.0, wait)


def _asked_wait(headers: Mapping[str, str]) -> float | None:
    """Seconds a rate-limited answer asks to wait, if it says."""
    return _seconds(_reset_after(headers))


def raise_for(response: httpx.Response, op: str, *, capacity: bool = False) -> None:
    """Fly's error answer (``{"error", "status"}``) as our exception, one sentence. ``capacity``:
    a create's 403/409/412, which Fly uses for quota and capacity (Kilo-Org/cloud#412, #516)."""
    status = response.status_code
    said = _said(response)
    what = f"Fly.io answered {status} to {op}: {said}"
    if (capacity and status in (403, 409, 412, 422)) or "quota" in str(said).lower():
        raise ProviderUnavailableError(
            f"{what}; Fly.io is out of capacity or quota here: retry later or set another region", op=op
        )
    if status in (401, 403):
        raise AuthenticationError(f"{what}; check FLY_API_TOKEN and its app or org", op=op)
    if status == 404:
        raise InstanceNotFoundError(what, op=op)
    if status == 429:
        asked = _asked_wait(response.headers)
        when = "retry later" if asked is None else f"it asks to wait {asked:g} s: try again at {_at(asked)}"
        raise ProviderUnavailableError(
            f"{what}; Fly.io is rate limiting: {when}, or lower the concurrency", op=op
        )
    if status >= 500:
        raise ProviderUnavailableError(f"{what}; retry later or check status.flyio.net", op=op)
    if status in (400, 422):
        raise ConfigError(what, op=op)
    raise ExecError(what, op=op)
