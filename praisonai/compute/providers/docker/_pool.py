"""Several Docker engines as one provider: ``DockerCompute(hosts=[...])``.

Each host is a single-engine ``DockerCompute`` (a *member*); the pool places each new instance on
the least-loaded host that answers, and finds an instance's host again from its id alone, from any
process: container names are unique per instance, so every host is asked at once (the ledger
row's options list them) and the first that has it wins. A host that does not answer within
:data:`PROBE_TIMEOUT_S` is left out of placement for :data:`DOWN_FOR_S`, and an instance that may
be on it is reported as unreachable (``ProviderUnavailableError`` naming the host), without
holding up the instances of the other hosts.

Hosts use DOCKER_HOST syntax: ``unix://``, ``tcp://`` (with TLS when the host has a ``tls`` cert
directory) and ``ssh://`` (through an OpenSSH forward started on first use, ``_tunnel``; ``close``
stops it). Captures are per engine, so a pool does not capture: every instance runs its own setup.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

import anyio
import anyio.from_thread
import anyio.to_thread

from praisonai._errors import ConfigError, InstanceNotFoundError, ProviderUnavailableError
from praisonai._types import Capability, ExecRequest, ExecResult, InstanceInfo, InstanceStatus
from praisonai.compute.channel import ChannelMixin
from praisonai.compute.config import ComputeConfig
from praisonai.compute.lifecycle import LABEL_PROVIDER
from praisonai.compute.providers.docker._engine import DockerHost, container_name, engine_client, info_of
from praisonai.compute.providers.docker._exec import DockerExecTransport
from praisonai.runtime.channel import Channel

T = TypeVar("T")

#: How long a host may take to answer a look-up, a listing or a health check.
PROBE_TIMEOUT_S = 5.0
#: How long a host that did not answer is left out of placement before it is asked again.
DOWN_FOR_S = 10.0


class PoolMixin(ChannelMixin):
    """``DockerCompute``'s pool: with ``hosts``, every primitive runs on its instance's host (a
    member); without, each goes on to the single engine (next in the MRO)."""

    # Set by the single engine's constructor (``DockerEngine``). Its primitives are reached through
    # super() (the next class in ``DockerCompute``'s MRO), which mypy cannot see: hence safe-super.
    _api: Any
    _base_url: str | None
    default_image: str
    pull: bool

    def __init__(
        self, *, hosts: Sequence[DockerHost | str] = (), base_url: str | None = None, **settings: Any
    ) -> None:
        """``hosts``: the engines (at least one, no repeats), instead of ``base_url``."""
        super().__init__(hosts=hosts, base_url=base_url, **settings)  # type: ignore[call-arg]  # DockerEngine's
        self._members: dict[str, PoolMixin] = {}
        if not hosts:
            return
        if base_url is not None:
            raise ConfigError("give either base_url or hosts, not both", op="config")
        parsed: tuple[DockerHost, ...] = getattr(self.options, "hosts", ())
        runtime = getattr(self.options, "runtime", None)  # each member runs the pool's runtime
        urls = [h.url for h in parsed]
        if len(set(urls)) != len(urls):
            raise ConfigError("a docker pool lists each host once", op="config")
        for host in parsed:
            engine_client(host, connect=False)  # refuses what cannot be pooled, now
        self._hosts = {host.url: host for host in parsed}
        self._members = {
            url: type(self)(image=self.default_image, base_url=url, pull=self.pull, runtime=runtime)
            for url in urls
        }
        self._host_of: dict[str, str] = {}  # instance id -> host url, as found in this process
        self._down_until: dict[str, float] = {}
        self._placing: dict[str, int] = dict.fromkeys(urls, 0)
        self._connecting = {url: threading.Lock() for url in urls}  # one client (one ssh user) per host
        self.capabilities = type(self).capabilities - {Capability.CAPTURE}

    @property
    def api(self) -> Any:
        """The engine's client; a pool has one per host and refuses."""
        if self._members:
            raise ConfigError("a docker pool has one engine per host, not one API client", op="config")
        return super().api  # type: ignore[misc]  # DockerEngine's

    # ---- hosts -------------------------------------------------------------------------------

    async def _ask(self, url: str, fn: Callable[[Any], T]) -> T:
        """``fn(api)`` on host ``url`` within :data:`PROBE_TIMEOUT_S`; a host that fails to answer
        is marked down and the failure is ``ProviderUnavailableError`` naming it."""

        def call() -> T:
            return fn(self._client(url))

        try:
            with anyio.fail_after(PROBE_TIMEOUT_S):
                result = await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
        except TimeoutError:
            self._down_until[url] = time.monotonic() + DOWN_FOR_S
            raise ProviderUnavailableError(
                f"docker host {url} did not answer within {PROBE_TIMEOUT_S:g}s", op="docker"
            ) from None
        except Exception as exc:
            if _is_answer(exc):
                raise
            self._down_until[url] = time.monotonic() + DOWN_FOR_S
            if isinstance(exc, ProviderUnavailableError):  # names the host already (an ssh failure)
                raise
            raise ProviderUnavailableError(f"docker host {url} does not answer: {exc}", op="docker") from None
        self._down_until.pop(url, None)
        return result

    def _client(self, url: str) -> Any:
        """Host ``url``'s client, made on first use (blocking: it asks the engine its API version)."""
        member = self._members[url]
        with self._connecting[url]:
            if member._api is None:
                member._api = engine_client(self._hosts[url])
        return member._api

    def close(self) -> None:
        """Close the pool's engine clients and the helpers opened through them, and stop its ssh
        forwards (each shared by this process's pools over that host, stopped with the last of
        them). The pool still works afterwards: its next call connects again. One engine's client
        is shared process-wide (``shared_client``): nothing to close here."""
        from praisonai.compute.providers.docker import _tunnel

        if not self._members:
            return
        for instance_id in list(self._host_of):
            self._channels.drop(instance_id)
        for url, member in self._members.items():
            with self._connecting[url]:
                api, member._api = member._api, None
            if api is None:
                continue
            api.close()
            if url.startswith("ssh://"):
                host = self._hosts[url]
                _tunnel.release(_tunnel.target(url, host.socket, host.ssh_config))

    async def _each(self, fn: Callable[[str], Awaitable[T]]) -> dict[str, T | Exception]:
        """``fn(url)`` on every host at once: each host's result or exception."""
        out: dict[str, T | Exception] = {}

        async def one(url: str) -> None:
            try:
                out[url] = await fn(url)
            except Exception as exc:
                out[url] = exc

        async with anyio.create_task_group() as tg:
            for url in self._members:
                tg.start_soon(one, url)
        return out

    async def _locate(self, instance_id: str) -> PoolMixin:
        """The member holding ``instance_id``: remembered, else every host asked at once.

        Raises:
            InstanceNotFoundError: every host answered, none has it.
            ProviderUnavailableError: no answering host has it and some host did not answer.
        """
        url = self._host_of.get(instance_id)
        if url is not None:
            return self._members[url]
        name = container_name(instance_id)
        found = await self._each(
            lambda u: self._ask(u, lambda api: api.containers(all=True, filters={"name": f"^/{name}$"}))
        )
        for url, rows in found.items():
            if isinstance(rows, list) and rows:
                self._host_of[instance_id] = url
                return self._members[url]
        down = [str(e) for e in found.values() if isinstance(e, Exception)]
        if down:
            message = f"docker instance {instance_id} is on no answering host; {'; '.join(down)}"
            raise ProviderUnavailableError(message, op="lookup")
        raise InstanceNotFoundError(
            f"no docker instance {instance_id!r} on any host of the pool", op="lookup"
        )

    async def _place(self) -> str:
        """The answering host with the fewest of this provider's containers (its own count, plus
        placements of this process not yet created), counted anew for each instance; the caller
        releases the reservation (``_placing``) once the container exists or failed."""
        now = time.monotonic()
        candidates = [u for u in self._members if self._down_until.get(u, 0.0) <= now] or list(self._members)
        label = {"label": f"{LABEL_PROVIDER}={self.name}"}
        loads: dict[str, int] = {}
        errors: list[str] = []

        async def count(url: str) -> None:
            try:
                rows = await self._ask(url, lambda api: api.containers(all=True, filters=label))
            except ProviderUnavailableError as exc:
                errors.append(str(exc))
                return
            loads[url] = len(rows)

        async with anyio.create_task_group() as tg:
            for url in candidates:
                tg.start_soon(count, url)
        if not loads:
            raise ProviderUnavailableError(
                f"no docker host of the pool answers: {'; '.join(errors)}", op="provision"
            )
        # Counted, compared and reserved with no await in between: concurrent placements see
        # each other's reservations even before their containers exist.
        url = min(loads, key=lambda u: (loads[u] + self._placing[u], candidates.index(u)))
        self._placing[url] += 1
        return url

    async def _on_new_host(self, instance_id: str, create: Callable[[PoolMixin], Awaitable[T]]) -> T:
        url = await self._place()
        self._host_of[instance_id] = url
        try:
            return await create(self._members[url])
        finally:
            self._placing[url] -= 1

    # ---- the provider's primitives, each on its instance's host --------------------------------

    def unavailable_reason(self) -> str | None:
        """``None`` when at least one host answers and has the default image."""
        if not self._members:  # one engine
            return super().unavailable_reason()
        reasons = [self._reason(url) for url in self._members]
        if any(r is None for r in reasons):
            return None
        return "no docker host of the pool is usable: " + "; ".join(
            f"{u}: {r}" for u, r in zip(self._members, reasons, strict=True)
        )

    def _reason(self, url: str) -> str | None:
        try:
            self._client(url)
        except ProviderUnavailableError as exc:  # names the host already (an ssh failure)
            return str(exc)
        except Exception as exc:  # this host's failure is its reason
            return f"the Docker engine at {url} does not answer: {exc}"
        return self._members[url].unavailable_reason()

    def check_supported(self, cfg: ComputeConfig) -> None:
        if not self._members:  # one engine
            return super().check_supported(cfg)
        for member in self._members.values():
            member.check_supported(cfg)

    async def _create(self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str]) -> InstanceInfo:
        if not self._members:  # one engine
            return await super()._create(instance_id, cfg, labels)  # type: ignore[safe-super]
        info = await self._on_new_host(instance_id, lambda m: m._create(instance_id, cfg, labels))
        return _on(info, self._host_of[instance_id])

    async def _run_once(
        self,
        instance_id: str,
        cfg: ComputeConfig,
        labels: dict[str, str],
        request: ExecRequest,
        on_start: Callable[[], None] | None,
    ) -> ExecResult:
        if not self._members:  # one engine
            return await super()._run_once(instance_id, cfg, labels, request, on_start)
        try:
            return await self._on_new_host(
                instance_id, lambda m: m._run_once(instance_id, cfg, labels, request, on_start)
            )
        finally:
            self._host_of.pop(instance_id, None)

    async def _destroy(self, instance_id: str) -> bool:
        if not self._members:  # one engine
            return await super()._destroy(instance_id)  # type: ignore[safe-super]
        self._channels.drop(instance_id)
        try:
            member = await self._locate(instance_id)
        except InstanceNotFoundError:
            return False
        self._host_of.pop(instance_id, None)
        return await member._destroy(instance_id)

    async def _status(self, instance_id: str) -> InstanceInfo:
        if not self._members:  # one engine
            return await super()._status(instance_id)  # type: ignore[safe-super]
        member = await self._locate(instance_id)
        return _on(await member._status(instance_id), member._base_url)

    async def _list(self) -> list[InstanceInfo]:
        """Every host's instances; an instance this process placed on a host that does not answer
        is listed with status ``error`` and the reason in its metadata (``unreachable``)."""
        if not self._members:  # one engine
            return await super()._list()  # type: ignore[safe-super]
        label = {"label": f"{LABEL_PROVIDER}={self.name}"}
        found = await self._each(lambda u: self._ask(u, lambda api: api.containers(all=True, filters=label)))
        if all(isinstance(rows, Exception) for rows in found.values()):
            raise ProviderUnavailableError("no docker host of the pool answers", op="list")
        infos: list[InstanceInfo] = []
        for url, rows in found.items():
            if isinstance(rows, Exception):
                infos += [_unreachable(i, url, rows) for i, u in self._host_of.items() if u == url]
            else:
                infos += [_on(info_of(row), url) for row in rows]
        return infos

    async def _open_channel(self, instance_id: str) -> Channel:
        if self._members:
            await self._locate(instance_id)  # _transport runs in a worker thread and reads the cache
        return await super()._open_channel(instance_id)

    def _member(self, instance_id: str) -> PoolMixin:
        """The instance's member, from a worker thread (looked up on the event loop if need be)."""
        url = self._host_of.get(instance_id)
        return self._members[url] if url else anyio.from_thread.run(self._locate, instance_id)

    def _transport(self, instance_id: str, argv: list[str]) -> DockerExecTransport:
        if not self._members:  # one engine
            transport = super()._transport(instance_id, argv)  # type: ignore[safe-super]
        else:
            transport = self._member(instance_id)._transport(instance_id, argv)
        return cast(DockerExecTransport, transport)  # a DockerEngine's, either way

    def _session_transport(self, instance_id: str, argv: list[str]) -> DockerExecTransport:
        if not self._members:  # one engine
            transport = super()._session_transport(instance_id, argv)
        else:
            transport = self._member(instance_id)._session_transport(instance_id, argv)
        return cast(DockerExecTransport, transport)

    async def _channel_path(self, instance_id: str, path: str) -> str:
        if not self._members:  # one engine
            return await super()._channel_path(instance_id, path)
        return await (await self._locate(instance_id))._channel_path(instance_id, path)

    async def _upload(self, instance_id: str, local: Path, remote: str) -> None:
        if not self._members:  # one engine
            return await super()._upload(instance_id, local, remote)  # type: ignore[safe-super]
        await (await self._locate(instance_id))._upload(instance_id, local, remote)

    async def _download(self, instance_id: str, remote: str, local: Path) -> None:
        if not self._members:  # one engine
            return await super()._download(instance_id, remote, local)  # type: ignore[safe-super]
        await (await self._locate(instance_id))._download(instance_id, remote, local)


def _is_answer(exc: Exception) -> bool:
    """Whether ``exc`` is the engine's answer (an API error such as 404) rather than its silence."""
    import docker

    return isinstance(exc, docker.errors.APIError)


def _on(info: InstanceInfo, url: str | None) -> InstanceInfo:
    return dataclasses.replace(info, metadata={**info.metadata, "host": url or ""})


def _unreachable(instance_id: str, url: str, exc: Exception) -> InstanceInfo:
    return InstanceInfo(
        instance_id=instance_id,
        provider="docker",
        status=InstanceStatus.ERROR,
        endpoint=f"docker://{container_name(instance_id)}",
        metadata={"host": url, "unreachable": str(exc)},
    )
