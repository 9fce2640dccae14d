"""Pause and resume on docker: the container is stopped, not removed, and started again.

Only a container made without ``auto_remove`` survives its stop, so an instance can be paused
when its config says ``idle_action='pause'`` (``_spec.host_config``); one made to be removed once
stopped refuses, in one sentence. Its watchdog pauses it by itself when idle (it exits; the
container stops and stays), so an instance whose owner died is paused too, not removed.

``docker start`` runs the container's command again: the watchdog restarts (its idle countdown
and ttl from the start) and so does the helper on the main stdin, which takes as its nonce the
first line that arrives there. So a resume arms a fresh nonce in this process (``MainKeys``): its
next channel attaches and sends it; a process that attaches first takes the helper, and this one
then opens an exec channel (``_main.open_channel`` falls back). A paused instance's first channel
(any call) resumes it (``DockerPauser.waking``): the failure to open one on a stopped container
is checked, once.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from praisonai import _limits
from praisonai._errors import InstanceNotFoundError, UnsupportedFeatureError
from praisonai._types import InstanceInfo
from praisonai.compute.abilities.pause import waking
from praisonai.compute.lifecycle import LABEL_CREATED, check_home
from praisonai.compute.providers.docker import _main
from praisonai.compute.providers.docker._client import container_name, info_of
from praisonai.runtime.pool import ChannelPool

T = TypeVar("T")


def pausable(inspected: dict[str, Any]) -> bool:
    """Whether the container outlives its stop (made without ``auto_remove``)."""
    return not (inspected.get("HostConfig") or {}).get("AutoRemove", True)


def is_paused(inspected: dict[str, Any]) -> bool:
    """A container that stopped and stays: paused (by ``pause`` or by its watchdog)."""
    return pausable(inspected) and not (inspected.get("State") or {}).get("Running")


@dataclass(frozen=True)
class DockerPauser:
    """``DockerEngine``'s pauser (``abilities.pause.Pauser``), from the engine's narrow parts:
    ``call`` runs one blocking docker-py call (``DockerEngine._call``) on the client ``api()``
    gives, ``inspect`` reads a container (``InstanceNotFoundError`` when there is none),
    ``channels`` and ``keys`` are the engine's channel pool and main-channel keys, and ``shutdown``
    removes an instance past its ttl."""

    call: Callable[..., Awaitable[Any]]
    api: Callable[[], Any]
    inspect: Callable[[str], Awaitable[dict[str, Any]]]
    channels: ChannelPool
    keys: _main.MainKeys
    shutdown: Callable[[str], Awaitable[object]]

    async def pause(self, instance_id: str) -> InstanceInfo:
        """Stop the container keeping it (see the module docstring). Idempotent."""
        inspected = await self.inspect(instance_id)
        check_home(instance_id, labels_of(inspected), "pause")
        if not pausable(inspected):
            raise UnsupportedFeatureError(
                f"docker instance {instance_id} was made to be removed once stopped, so it cannot be "
                "paused; provision it with idle_action='pause' (environment.yaml: idle_action: pause)",
                op="pause",
            )
        self.channels.drop(instance_id)
        self.keys.drop(instance_id)
        if (inspected.get("State") or {}).get("Running"):
            await self.call(self.api().stop, container_name(instance_id), timeout=int(_limits.KILL_GRACE_S))
        return info_of(await self.inspect(instance_id))

    async def resume(self, instance_id: str) -> InstanceInfo:
        """Start the paused container again under its id, a fresh main-channel nonce armed here.
        A running instance is returned as it is; one past its ttl is removed instead.

        Raises:
            InstanceNotFoundError: no such container, or it was past its ttl (and is removed now).
        """
        inspected = await self.inspect(instance_id)
        check_home(instance_id, labels_of(inspected), "resume")
        if not (inspected.get("State") or {}).get("Running"):
            if why := past_ttl(inspected, time.time()):  # a pause never extends a lifetime
                await self.shutdown(instance_id)
                raise InstanceNotFoundError(
                    f"docker instance {instance_id} was {why}: removed, not resumed", op="resume"
                )
            self.channels.drop(instance_id)
            await self.call(self.api().start, container_name(instance_id))
            self.keys.rearm(instance_id, _main.new_key())
            inspected = await self.inspect(instance_id)
        return info_of(inspected)

    async def paused_disk(self, instance_id: str) -> int | None:
        """The container's writable layer in bytes (docker's ``SizeRw``; the engine computes it)."""
        name = container_name(instance_id)
        rows = await self.call(self.api().containers, all=True, size=True, filters={"name": f"^/{name}$"})
        size = rows[0].get("SizeRw") if rows else None
        return int(size) if isinstance(size, int) else None

    async def waking(
        self, instance_id: str, use: Callable[[str], Awaitable[T]], resume: Callable[[str], Awaitable[object]]
    ) -> T:
        """``use(instance_id)`` (opening a channel); when it fails because the instance is paused,
        ``resume`` it (the provider's public ``resume``) and use it once more
        (``abilities.pause.waking``)."""

        async def paused() -> bool:
            return is_paused(await self.inspect(instance_id))

        return await waking(lambda: use(instance_id), paused, lambda: resume(instance_id))


def labels_of(inspected: dict[str, Any]) -> dict[str, str]:
    """The container's labels, as its creator set them."""
    return dict((inspected.get("Config") or {}).get("Labels") or {})


def past_ttl(inspected: dict[str, Any], now: float) -> str | None:
    """Why the container is past its ttl (the watchdog's ``TTL_S`` argument, from its creation
    label), or ``None``. A restarted watchdog counts its ttl from the restart: this check is what
    keeps a resume from giving an expired instance a new lifetime."""
    config = inspected.get("Config") or {}
    argv, created = config.get("Cmd") or [], (config.get("Labels") or {}).get(LABEL_CREATED, "")
    ttl = argv[-2] if len(argv) >= 4 and argv[-4] == "praisonai-watchdog" else "0"
    if not (ttl.isdigit() and int(ttl) > 0 and created.isdigit()):
        return None
    age = now - int(created)
    return f"{age:.0f}s old (ttl_s={int(ttl)})" if age >= int(ttl) else None
