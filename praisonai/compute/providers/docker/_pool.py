"""Several Docker engines as one provider: ``DockerCompute(hosts=[...])``.

Each host is a ``DockerEngine`` (a *member*) that the pool holds and forwards each provider primitive
to, as one transport wraps another: the pool's own public methods do the lifecycle work once (the
ledger, labels, setup), and the member that owns the instance does the engine's. The pool places
each new instance on the least-loaded host that answers, and finds an instance's host again from
its id alone, from any process: container names are unique per instance, so every host is asked at
once (the ledger row's options list them) and the first that has it wins. A host that does not answer within
:data:`PROBE_TIMEOUT_S` is left out of placement for :data:`DOWN_FOR_S`, and an instance that may
be on it is reported as unreachable (``ProviderUnavailableError`` naming the host), without
holding up the instances of the other hosts.

Hosts use DOCKER_HOST syntax: ``unix://``, ``tcp://`` (with TLS when the host has a ``tls`` cert
directory) and ``ssh://`` (through an OpenSSH forward started on first use, ``_tunnel``; ``close``
stops it). Captures are per engine, so a pool holds no capturer: every instance runs its own setup.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

import anyio
import anyio.from_thread
import anyio.to_thread

from praisonai._errors import ConfigError, InstanceNotFoundError, ProviderUnavailableError
from praisonai._types import Capability, ExecRequest, ExecResult, InstanceInfo, InstanceStatus
from praisonai.compute.abilities import part
from praisonai.compute.base import ComputeProvider
from praisonai.compute.channel import ChannelMixin
from praisonai.compute.config import ComputeConfig, Runtime
from praisonai.compute.forwards import ExecRelay
from praisonai.compute.providers.docker._client import DockerHost, container_name, containers_of, sdk
from praisonai.compute.providers.docker._engine import DockerEngine
from praisonai.compute.providers.docker._exec import DockerExecTransport
from praisonai.compute.providers.docker._once import PoolLauncher
from praisonai.compute.providers.docker._options import CAPABILITIES, DockerOptions, docker_options
from praisonai.runtime.channel import Channel
from praisonai.runtime.pool import ChannelPool

T = TypeVar("T")

#: How long a host may take to answer a look-up, a listing or a health check.
PROBE_TIMEOUT_S = 5.0
#: How long a host that did not answer is left out of placement before it is asked again.
DOWN_FOR_S = 10.0


class DockerPool(ChannelMixin, ComputeProvider):
    """Docker compute on several engines (``DockerCompute(hosts=[...])``): each primitive runs on
    its instance's host, a ``DockerEngine`` this pool holds."""

    name = "docker"
    options_model = DockerOptions
    requires = ("docker",)
    extra = "docker"
    capabilities = CAPABILITIES

    def __init__(
        self,
        *,
        image: str | None = None,
        base_url: str | None = None,
        pull: bool = True,
        runtime: Runtime | None = None,
        hosts: Sequence[DockerHost | str] = (),
    ) -> None:
        """As ``DockerEngine``'s; ``hosts``: the engines (at least one, no repeats; ``DockerHost``s
        or DOCKER_HOST strings), instead of ``base_url``."""
        self._options = docker_options(image, base_url, pull, runtime, hosts)
        if base_url is not None:
            raise ConfigError("give either base_url or hosts, not both", op="config")
        urls = [host.url for host in self.options.hosts]
        if not urls:
            raise ConfigError("a docker pool needs at least one host", op="config")
        if len(set(urls)) != len(urls):
            raise ConfigError("a docker pool lists each host once", op="config")
        o = self._options  # each host runs the pool's image, pull and runtime
        self._members = {
            h.url: DockerEngine(image=o.image, pull=o.pull, runtime=o.runtime, host=h) for h in o.hosts
        }
        self._host_of: dict[str, str] = {}  # instance id -> host url, as found in this process
        self._down_until: dict[str, float] = {}
        self._placing: dict[str, int] = dict.fromkeys(urls, 0)

    @property
    def options(self) -> DockerOptions:
        return self._options

    @part(Capability.PORTS)
    def forwarder(self) -> ExecRelay:
        """The relay through the pool's own channel to each member (not a member's forwarder,
        which would probe through the member's channel, beside the pool's)."""
        return ExecRelay(self._transport, self.execute)

    @part(None)
    def launcher(self) -> PoolLauncher:
        """Each one-shot run on a new host, by that host's launcher."""
        any_host = next(iter(self._members.values()))
        return PoolLauncher(serves=any_host.launcher.serves, launch=self._launch_on_a_host)

    # ---- hosts -------------------------------------------------------------------------------

    async def _ask(self, url: str, fn: Callable[[DockerEngine], T]) -> T:
        """``fn(member)``, a blocking call, on host ``url`` within :data:`PROBE_TIMEOUT_S`; a host
        that fails to answer is marked down and the failure is ``ProviderUnavailableError`` naming it."""
        member = self._members[url]
        try:
            with anyio.fail_after(PROBE_TIMEOUT_S):
                result = await anyio.to_thread.run_sync(fn, member, abandon_on_cancel=True)
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

    def close(self) -> None:
        """Close the pool's engine clients and the helpers opened through them, and stop its ssh
        forwards (each shared by this process's pools over that host, stopped with the last of
        them). The pool still works afterwards: its next call connects again."""
        for instance_id in list(self._host_of):
            self._channels.drop(instance_id)
        for member in self._members.values():
            member.close()

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

    async def _locate(self, instance_id: str) -> str:
        """The url of the host holding ``instance_id``: remembered, else every host asked at once.

        Raises:
            InstanceNotFoundError: every host answered, none has it.
            ProviderUnavailableError: no answering host has it and some host did not answer.
        """
        url = self._host_of.get(instance_id)
        if url is not None:
            return url
        found = await self._each(lambda u: self._ask(u, lambda member: member.holds(instance_id)))
        for url, holds in found.items():
            if holds is True:
                self._host_of[instance_id] = url
                return url
        down = [str(e) for e in found.values() if isinstance(e, Exception)]
        if down:
            message = f"docker instance {instance_id} is on no answering host; {'; '.join(down)}"
            raise ProviderUnavailableError(message, op="lookup")
        raise InstanceNotFoundError(
            f"no docker instance {instance_id!r} on any host of the pool", op="lookup"
        )

    async def _owner(self, instance_id: str) -> DockerEngine:
        return self._members[await self._locate(instance_id)]

    async def _place(self) -> str:
        """The answering host with the fewest of this provider's containers (its own count, plus
        placements of this process not yet created), counted anew for each instance; the caller
        releases the reservation (``_placing``) once the container exists or failed."""
        now = time.monotonic()
        candidates = [u for u in self._members if self._down_until.get(u, 0.0) <= now] or list(self._members)
        loads: dict[str, int] = {}
        errors: list[str] = []

        async def count(url: str) -> None:
            try:
                rows = await self._ask(url, lambda m: containers_of(m.api, m.name))  # not swept on each
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

    async def _on_new_host(self, instance_id: str, create: Callable[[DockerEngine], Awaitable[T]]) -> T:
        url = await self._place()
        self._host_of[instance_id] = url
        try:
            return await create(self._members[url])
        finally:
            self._placing[url] -= 1

    # ---- the provider's primitives, each on its instance's host --------------------------------

    def unavailable_reason(self) -> str | None:
        """``None`` when at least one host answers and has the default image."""
        reasons = [self._reason(url) for url in self._members]
        if any(r is None for r in reasons):
            return None
        return "no docker host of the pool is usable: " + "; ".join(
            f"{u}: {r}" for u, r in zip(self._members, reasons, strict=True)
        )

    def _reason(self, url: str) -> str | None:
        member = self._members[url]
        try:
            member.connect()
        except ProviderUnavailableError as exc:  # names the host already (an ssh failure)
            return str(exc)
        except Exception as exc:  # this host's failure is its reason
            return f"the Docker engine at {url} does not answer: {exc}"
        return member.unavailable_reason()

    def check_supported(self, cfg: ComputeConfig) -> None:
        for member in self._members.values():
            member.check_supported(cfg)

    async def _create(self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str]) -> InstanceInfo:
        info = await self._on_new_host(instance_id, lambda m: m._create(instance_id, cfg, labels))
        return _on(info, self._host_of[instance_id])

    async def _launch_on_a_host(
        self,
        instance_id: str,
        cfg: ComputeConfig,
        labels: dict[str, str],
        request: ExecRequest,
        on_start: Callable[[], None] | None,
    ) -> ExecResult:
        try:
            return await self._on_new_host(
                instance_id, lambda m: m.launcher.launch(instance_id, cfg, labels, request, on_start)
            )
        finally:
            self._host_of.pop(instance_id, None)

    async def _destroy(self, instance_id: str) -> bool:
        self._channels.drop(instance_id)
        try:
            member = await self._owner(instance_id)
        except InstanceNotFoundError:
            return False
        self._host_of.pop(instance_id, None)
        return await member._destroy(instance_id)

    @part(Capability.PAUSE)
    def pauser(self) -> PoolPauser:
        return PoolPauser(self._locate, self._members, self._channels)

    async def _status(self, instance_id: str) -> InstanceInfo:
        url = await self._locate(instance_id)
        return _on(await self._members[url]._status(instance_id), url)

    async def _list(self) -> list[InstanceInfo]:
        """Every host's instances; an instance this process placed on a host that does not answer
        is listed with status ``error`` and the reason in its metadata (``unreachable``)."""
        found = await self._each(lambda u: self._ask(u, DockerEngine.listing))
        if all(isinstance(infos, Exception) for infos in found.values()):
            raise ProviderUnavailableError("no docker host of the pool answers", op="list")
        listed: list[InstanceInfo] = []
        for url, infos in found.items():
            if isinstance(infos, Exception):
                listed += [_unreachable(i, url, infos) for i, u in self._host_of.items() if u == url]
            else:
                listed += [_on(info, url) for info in infos]
        return listed

    async def _open_channel(self, instance_id: str) -> Channel:
        """The member's: its main channel when this process may open it, else an exec one."""
        return await (await self._owner(instance_id))._open_channel(instance_id)

    async def provision(self, config: object = None) -> InstanceInfo:
        """As ``ComputeProvider``'s; this process's first channel to the instance is then its
        main one (unless handed off: ``handoff_key``)."""
        info = await super().provision(config)
        (await self._owner(info.instance_id))._main_keys.arm(info.instance_id)
        return info

    def handoff_key(self, instance_id: str) -> str | None:
        """The member's (``DockerEngine.handoff_key``); None for an instance this process did not place."""
        url = self._host_of.get(instance_id)
        return None if url is None else self._members[url].handoff_key(instance_id)

    def adopt(self, instance_id: str, key: str) -> None:
        """The member's (``DockerEngine.adopt``), once the host holding the instance is found
        (blocking: one call per host, when this process does not know it yet).

        Raises:
            InstanceNotFoundError: no host of the pool holds it.
        """
        self._check_id(instance_id)
        url = self._host_of.get(instance_id)
        if url is None:
            url = next((u for u, member in self._members.items() if member.holds(instance_id)), None)
        if url is None:
            message = f"no docker instance {instance_id!r} on any host of the pool"
            raise InstanceNotFoundError(message, op="adopt")
        self._host_of[instance_id] = url
        self._members[url].adopt(instance_id, key)

    def _member(self, instance_id: str) -> DockerEngine:
        """The instance's member, from a worker thread (looked up on the event loop if need be)."""
        url = self._host_of.get(instance_id) or anyio.from_thread.run(self._locate, instance_id)
        return self._members[url]

    def _transport(self, instance_id: str, argv: list[str]) -> DockerExecTransport:
        return self._member(instance_id)._transport(instance_id, argv)

    def _session_transport(self, instance_id: str, argv: list[str]) -> DockerExecTransport:
        return self._member(instance_id)._session_transport(instance_id, argv)

    async def _channel_path(self, instance_id: str, path: str) -> str:
        return await (await self._owner(instance_id))._channel_path(instance_id, path)

    async def _upload(self, instance_id: str, local: Path, remote: str) -> None:
        await (await self._owner(instance_id))._upload(instance_id, local, remote)

    async def _download(self, instance_id: str, remote: str, local: Path) -> None:
        await (await self._owner(instance_id))._download(instance_id, remote, local)

    async def _unpack_archive(self, instance_id: str, archive: Path, remote_dir: str) -> bool:
        return await (await self._owner(instance_id))._unpack_archive(instance_id, archive, remote_dir)

    async def _after_setup(self, instance_id: str) -> None:
        await (await self._owner(instance_id))._after_setup(instance_id)


@dataclasses.dataclass(frozen=True)
class PoolPauser:
    """``DockerPool``'s pauser (``abilities.pause.Pauser``): each call on the pauser of the member
    engine holding the instance (``locate`` gives its host's url), the info naming that host."""

    locate: Callable[[str], Awaitable[str]]
    members: Mapping[str, DockerEngine]
    channels: ChannelPool

    async def pause(self, instance_id: str) -> InstanceInfo:
        self.channels.drop(instance_id)
        url = await self.locate(instance_id)
        return _on(await self.members[url].pauser.pause(instance_id), url)

    async def resume(self, instance_id: str) -> InstanceInfo:
        url = await self.locate(instance_id)
        return _on(await self.members[url].pauser.resume(instance_id), url)

    async def paused_disk(self, instance_id: str) -> int | None:
        return await self.members[await self.locate(instance_id)].pauser.paused_disk(instance_id)


def _is_answer(exc: Exception) -> bool:
    """Whether ``exc`` is the engine's answer (an API error such as 404) rather than its silence."""
    docker = sdk()

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
