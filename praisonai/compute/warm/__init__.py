"""Warm pools: instances of one definition made ahead of time, handed out at once.

::

    async with WarmPool("docker", {"setup": ["pip install -r requirements.txt"]}, size=2) as pool:
        info = await pool.claim(env={"API_TOKEN": token})   # warm: made on entry; a replacement starts

Pooled instances are provisioned *without* env values: the definition's env and the claimer's are
bound to the instance when it is claimed (``provider.processes.bind_env``), so an instance waiting in
the pool holds no secret and two claimers never see each other's. With a capture of the
definition (docker), refilling costs a container start. Entering the pool fills it, so the first
claim is as warm as the others (a pool whose instances cannot be made raises on entry instead).
Waiting instances are kept active, so idle shutdown does not take them while the pool lives.
``close()`` (or leaving the ``async with``) shuts down what was not claimed; claimed instances
belong to their claimer.

**Shared pools, for every process of the home.** ``WarmPool(..., shared=True)`` (and
``praisonai compute warm --size N``) keeps its instances in the ledger instead of in memory: each
waits in state ``warm``, and any process claims one atomically. ``Sandbox.create`` and
``praisonai sandbox run`` claim one when a pool of the same provider, provider options and
definition exists (:func:`claim`), and a refill starts in a short-lived detached child. The pool's
size and value-free definition are recorded, so whoever claims can refill it; no daemon runs.
Shared instances obey their idle limit and ttl like any other (their watchdog stops them:
``close()`` leaves them to it, for other processes to claim until then), and ``praisonai compute
ps`` shows them as ``warm``::

    async with WarmPool("docker", {"image": "python:3.12"}, size=4, shared=True) as pool:
        info = await pool.claim(env={"API_TOKEN": token})   # Sandbox.create(image=...) claims too
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import anyio
from anyio.abc import TaskGroup

from praisonai._ledger import Ledger
from praisonai._limits import check_number
from praisonai._types import InstanceInfo
from praisonai.compute.base import ComputeProvider
from praisonai.compute.config import ComputeConfig
from praisonai.compute.registry import compute_provider
from praisonai.compute.warm import _rows
from praisonai.compute.warm._claim import claim as claim_shared
from praisonai.compute.warm._fill import fill, retire

__all__ = ["WarmPool", "claim", "fill", "retire"]

#: Take a warm instance from the home's shared pools (``None``: none matches): see ``_claim``.
claim = claim_shared


class WarmPool:
    """``size`` ready instances of ``config`` on ``compute``, refilled in the background (in
    this process; with ``shared``, in the home's ledger, for every process)."""

    def __init__(
        self, compute: object = None, config: object = None, *, size: int = 1, shared: bool = False
    ) -> None:
        check_number(size, "size")  # before anything is made: 0, nan, "3" or 1e9 mean nothing here
        self.provider: ComputeProvider = compute_provider(compute)
        definition = ComputeConfig.coerce(config)
        self.env = dict(definition.env)  # bound at claim time, never while pooled
        self.config = definition.model_copy(update={"env": {}})
        self.definition = definition  # a shared pool's key: env names in, values never stored
        self.size = size
        self.shared = shared
        self._ready: list[InstanceInfo] = []
        self._filling = 0
        self._changed = anyio.Event()
        self._tasks: TaskGroup | None = None
        self.failure: BaseException | None = None  # the last refill error, for diagnosis

    @property
    def definition_hash(self) -> str:
        return self.config.definition_hash()

    @property
    def ready(self) -> int:
        """Instances waiting to be claimed right now (a shared pool's: by any process)."""
        if self.shared:
            pool = _rows.Pool.of(self.provider, self.definition)
            return _rows.ready(Ledger.default(), pool, time.time())
        return len(self._ready)

    async def __aenter__(self) -> WarmPool:
        """Start the pool and wait until ``size`` instances are ready, so the first claim is warm.
        Raises the provisioning error (after shutting down what was made; a shared pool leaves
        what it made warm, for any process) when the pool cannot be filled: a pool that would
        only ever provision on the spot is a mistake to report."""
        self._tasks = anyio.create_task_group()
        await self._tasks.__aenter__()
        if self.shared:  # filled here once; claims refill it, from whichever process they run in
            try:
                await fill(self.provider, self.definition, self.size)
            except BaseException:
                await self.close()
                raise
            return self
        try:
            self._refill()
            self._tasks.start_soon(self._keep_warm)
            await self.wait_ready()
            if self.failure is not None:
                raise self.failure
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def wait_ready(self) -> None:
        """Wait until the pool is full (or a refill failed: see ``failure``)."""
        while len(self._ready) < self.size and self.failure is None:
            await self._changed.wait()

    async def claim(self, env: Mapping[str, str] | None = None) -> InstanceInfo:
        """A ready instance with the definition's env plus ``env`` bound (provisioned on the spot
        when the pool is empty); a replacement starts in the background."""
        if self._tasks is None:
            raise RuntimeError("use the pool inside `async with WarmPool(...)`")
        if self.shared:
            claimed = await claim_shared(self.provider, self.definition, env)
            return claimed or await self._provision_bound({**self.env, **(env or {})})
        info = self._ready.pop(0) if self._ready else await self.provider.provision(self.config)
        try:
            return await self._bound(info, {**self.env, **(env or {})})
        finally:
            self._refill()  # after the binding, so the claim does not compete with a provision

    async def _provision_bound(self, env: Mapping[str, str]) -> InstanceInfo:
        """An instance made on the spot (the shared pool was empty), with ``env`` bound."""
        return await self._bound(await self.provider.provision(self.config), env)

    async def _bound(self, info: InstanceInfo, env: Mapping[str, str]) -> InstanceInfo:
        """``info``'s instance with ``env`` bound; shut down when the binding fails."""
        try:
            if env:
                await self.provider.processes.bind_env(info.instance_id, env)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self.provider.shutdown(info.instance_id)
            raise
        return info

    async def retire(self) -> int:
        """End a shared pool for every process: no refill makes more, and the instances still
        warm are shut down (how many is returned). ``close()`` alone leaves them to be claimed."""
        if not self.shared:
            raise RuntimeError("retire() ends a shared pool: WarmPool(..., shared=True)")
        return await retire(self.provider, self.definition)

    async def close(self) -> None:
        """Stop refilling and shut down every instance nobody claimed (a shared pool's stay, for
        any process to claim until their idle limit or ttl). Idempotent."""
        tasks, self._tasks = self._tasks, None
        if tasks is not None:
            tasks.cancel_scope.cancel()
            await tasks.__aexit__(None, None, None)
        ready, self._ready = self._ready, []
        with anyio.CancelScope(shield=True):
            for info in ready:
                await self.provider.shutdown(info.instance_id)

    async def _keep_warm(self) -> None:
        """Touch the waiting instances well within their idle timeout, so neither the reaper nor
        an instance's own watchdog stops them while the pool lives (it stops them once it does not);
        one that died anyway is replaced."""
        while True:
            await anyio.sleep(max(self.config.idle_timeout_s / 3, 1))
            for info in list(self._ready):
                try:
                    await self.provider.execute(info.instance_id, "true")
                except Exception as exc:  # gone: replace it
                    self.failure = exc
                    if info in self._ready:
                        self._ready.remove(info)
                    self._refill()

    def _refill(self) -> None:
        assert self._tasks is not None
        for _ in range(self.size - len(self._ready) - self._filling):
            self._filling += 1
            self._tasks.start_soon(self._make_one)

    async def _make_one(self) -> None:
        try:
            info = await self.provider.provision(self.config)
            # Ready means the exec channel is open too: a claimer's first command or env binding
            # should not pay for starting the helper (a docker exec, ~50 ms).
            await self.provider.execute(info.instance_id, "true")
        except Exception as exc:  # kept for diagnosis; the next claim provisions on the spot
            self.failure = exc
        else:
            if self._tasks is None:  # closed while it was being made
                with anyio.CancelScope(shield=True):
                    await self.provider.shutdown(info.instance_id)
                return
            self._ready.append(info)
        finally:
            self._filling -= 1
            self._changed.set()
            self._changed = anyio.Event()
