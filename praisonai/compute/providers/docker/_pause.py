"""Pause and resume on docker, for every instance: the container is frozen, or stopped and kept.

A container made to be removed once stopped (``auto_remove``, the default ``idle_action='stop'``)
is **frozen** (``docker pause``: the cgroup freezer under runc, gVisor's own pause under runsc):
its processes stay in memory, stopped mid-instruction, and carry on where they were on
``docker unpause``; its files stay with it. Its memory stays held meanwhile. One made to be kept
(``idle_action='pause'``, ``_spec.host_config``) is **stopped** and started again: its files stay,
its processes end and its memory is freed; its watchdog pauses it so by itself when idle (it
exits; the container stops and stays), so an instance whose owner died is paused too, not removed.

Neither watchdog runs while paused, so what removes an instance nobody resumes is outside it: the
home's reaper (``_home_reaper.WATCHED_WHILE_PAUSED``: its ttl and its retain age), ``gc``, the
owner's reaper (its ttl), and a resume (one past its ttl is removed instead); a restarted docker
engine removes a frozen one itself (``auto_remove`` of a container that did not survive).

A frozen watchdog's clock runs on (``/proc/uptime``): so that a thaw is not taken for idleness,
``pause`` leaves a marker in the spool before it freezes (``.frozen``), which the watchdog takes for
activity once, at the first idle deadline after it (``watchdog.sh``); ``resume`` marks activity and
removes it, after the thaw. The ttl counts the frozen time: a pause never extends a lifetime.

``docker start`` runs the container's command again: the watchdog restarts (its idle countdown
and ttl from the start) and so does the helper on the main stdin, which takes as its nonce the
first line that arrives there. So a resume arms a fresh nonce in this process (``MainKeys``): its
next channel attaches and sends it; a process that attaches first takes the helper, and this one
then opens an exec channel (``_main.open_channel`` falls back). A frozen instance's main channel is
closed by its pause (its calls would hang on a frozen helper): after its thaw, channels are
``docker exec`` calls. A paused instance's first channel (any call) resumes it
(``DockerPauser.waking``): the failure to open one on a stopped or frozen container is checked, once.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio

from praisonai import _limits
from praisonai._errors import ExecError, InstanceNotFoundError
from praisonai._ledger import Ledger
from praisonai._types import InstanceInfo
from praisonai.compute.abilities.pause import waking
from praisonai.compute.base import SYSTEM_PATH
from praisonai.compute.lifecycle import LABEL_CREATED, check_home
from praisonai.compute.providers.docker import _main
from praisonai.compute.providers.docker._client import container_name, exec_errors, info_of
from praisonai.runtime.pool import ChannelPool

T = TypeVar("T")


#: How often a call waiting out a snapshot's freeze looks again (``_thawed_by_its_freezer``).
FREEZE_POLL_S = 0.05
#: The marker a pause leaves in the spool for the watchdog before it freezes (see the docstring).
FROZEN_MARKER = ".frozen"
#: Run as root in the container with the spool as ``$1``: before a freeze, and after a thaw
#: (activity, as the helper marks it: ``alive`` emptied, a sleeping watchdog woken).
_MARK_FROZEN = f'mkdir -p -- "$1" && true >"$1/{FROZEN_MARKER}"'
_MARK_THAWED = (
    f'true 2>/dev/null >"$1/alive"; rm -f -- "$1/{FROZEN_MARKER}"; '
    '[ ! -s "$1/.asleep" ] || echo 2>/dev/null 1<>"$1/.wake"'
)


def pausable(inspected: dict[str, Any]) -> bool:
    """Whether the container outlives its stop (made without ``auto_remove``): paused by a stop."""
    return not (inspected.get("HostConfig") or {}).get("AutoRemove", True)


def is_frozen(inspected: dict[str, Any]) -> bool:
    """A container under ``docker pause`` (its state still says running)."""
    return bool((inspected.get("State") or {}).get("Paused"))


def is_paused(inspected: dict[str, Any]) -> bool:
    """Frozen, or stopped and kept: paused (by ``pause``, or by its watchdog)."""
    running = (inspected.get("State") or {}).get("Running")
    return is_frozen(inspected) or (pausable(inspected) and not running)


@dataclass(frozen=True)
class DockerPauser:
    """``DockerEngine``'s pauser (``abilities.pause.Pauser``), from the engine's narrow parts:
    ``call`` runs one blocking docker-py call (``DockerEngine._call``) on the client ``api()``
    gives, ``inspect`` reads a container (``InstanceNotFoundError`` when there is none),
    ``channels`` and ``keys`` are the engine's channel pool and main-channel keys, ``spool`` says
    where an instance's helper spools, and ``shutdown`` removes an instance past its ttl."""

    call: Callable[..., Awaitable[Any]]
    api: Callable[[], Any]
    inspect: Callable[[str], Awaitable[dict[str, Any]]]
    channels: ChannelPool
    keys: _main.MainKeys
    spool: Callable[[str], str]
    shutdown: Callable[[str], Awaitable[object]]

    async def pause(self, instance_id: str) -> InstanceInfo:
        """Freeze the container, or stop it keeping it (see the module docstring). Idempotent."""
        inspected = await self.inspect(instance_id)
        check_home(instance_id, labels_of(inspected), "pause")
        if is_paused(inspected):
            return info_of(inspected)
        name = container_name(instance_id)
        self.channels.drop(instance_id)  # a frozen helper would hang them; a stopped one ends them
        self.keys.drop(instance_id)
        if pausable(inspected):
            await self.call(self.api().stop, name, timeout=int(_limits.KILL_GRACE_S))
        else:
            await self.call(run_as_root, self.api(), instance_id, _MARK_FROZEN, self.spool(instance_id))
            await self.call(self.api().pause, name)
        return info_of(await self.inspect(instance_id))

    async def resume(self, instance_id: str) -> InstanceInfo:
        """Thaw the frozen container, or start the stopped one again under its id with a fresh
        main-channel nonce armed here. A running instance is returned as it is; one past its ttl
        is removed instead.

        Raises:
            InstanceNotFoundError: no such container, or it was past its ttl (and is removed now).
        """
        inspected = await self.inspect(instance_id)
        check_home(instance_id, labels_of(inspected), "resume")
        if not is_paused(inspected) and (inspected.get("State") or {}).get("Running"):
            return info_of(inspected)
        if why := past_ttl(inspected, time.time()):  # a pause never extends a lifetime
            await self.shutdown(instance_id)
            raise InstanceNotFoundError(
                f"docker instance {instance_id} was {why}: removed, not resumed", op="resume"
            )
        name = container_name(instance_id)
        self.channels.drop(instance_id)
        if is_frozen(inspected):
            await self.call(self.api().unpause, name)
            await self.call(run_as_root, self.api(), instance_id, _MARK_THAWED, self.spool(instance_id))
        else:
            await self.call(self.api().start, name)
            self.keys.rearm(instance_id, _main.new_key())
        return info_of(await self.inspect(instance_id))

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

        async def use_once_thawed() -> T:
            try:
                return await use(instance_id)
            except InstanceNotFoundError:
                if not await self._thawed_by_its_freezer(instance_id):
                    raise
            return await use(instance_id)

        return await waking(use_once_thawed, paused, lambda: resume(instance_id))

    async def _thawed_by_its_freezer(self, instance_id: str) -> bool:
        """Whether the container was frozen by something other than a pause (a snapshot's freeze
        for its commit: the ledger still says running) and has since been thawed by it. Such a
        freeze is waited out, never thawed here mid-commit; one that outlasts
        ``FOREIGN_FREEZE_WAIT_S`` (its freezer died) is left to ``waking``, which resumes it."""
        deadline = time.monotonic() + _limits.FOREIGN_FREEZE_WAIT_S
        while is_frozen(await self.inspect(instance_id)):
            entry = await anyio.to_thread.run_sync(Ledger.default().get, instance_id)
            if entry is None or entry.state == "paused" or time.monotonic() > deadline:
                return False
            await anyio.sleep(FREEZE_POLL_S)
        return True


def run_as_root(api: Any, instance_id: str, script: str, spool: str) -> None:
    """Run ``script`` (``sh -c``, the spool as ``$1``) in the instance as root, with the system's
    PATH (blocking).

    Raises:
        InstanceNotFoundError: the container is gone or not running.
        ExecError: the script failed: the watchdog's marker may be missing, so nothing follows.
    """
    container = container_name(instance_id)
    with exec_errors(instance_id):
        argv = ["/bin/sh", "-c", script, "sh", spool]
        run = api.exec_create(container, argv, user="0", environment={"PATH": SYSTEM_PATH})["Id"]
        api.exec_start(run)
        code = api.exec_inspect(run).get("ExitCode")
    if code != 0:
        raise ExecError(
            f"could not mark docker instance {instance_id} for its watchdog (exit {code})", op="pause"
        )


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
