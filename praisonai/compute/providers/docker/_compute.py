"""``DockerCompute``: the one name users, the registry and the ledger use for docker.

It is :class:`~._engine.DockerEngine` (one engine: ``base_url``, else ``$DOCKER_HOST``) plus one
choice: given ``hosts``, constructing it makes a :class:`~._pool.DockerPool` instead, which holds
one ``DockerEngine`` per host. So ``DockerCompute(hosts=[...])``, ``DockerCompute.from_options``
and the registry's ``"docker"`` build a pool from the same options that name its hosts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from praisonai._types import Capability
from praisonai.compute.abilities import part
from praisonai.compute.config import Runtime
from praisonai.compute.providers.docker._client import DockerHost
from praisonai.compute.providers.docker._engine import DockerEngine
from praisonai.compute.providers.docker._main import WATCHDOG_LOG
from praisonai.compute.providers.docker._pool import DockerPool
from praisonai.compute.providers.docker._pty import DockerTerminals
from praisonai.compute.providers.docker._snapshot import DockerSnapshotter


class DockerCompute(DockerEngine):
    """Docker compute: one engine (``base_url``, else ``$DOCKER_HOST``), or several (``hosts``:
    a ``DockerPool``)."""

    #: Where the instance's watchdog writes its notices, inside the container (``compute logs``).
    watchdog_log = WATCHDOG_LOG

    def __new__(cls, *, hosts: Sequence[DockerHost | str] = (), **settings: Any) -> Any:
        """A ``DockerPool`` given ``hosts``, else this class. Typed ``Any``: a pool is not a
        ``DockerCompute`` (it holds engines), which a checker cannot say of a constructor."""
        if hosts:
            return DockerPool(hosts=hosts, **settings)
        return super().__new__(cls)

    def __init__(
        self,
        *,
        image: str | None = None,
        base_url: str | None = None,
        pull: bool = True,
        runtime: Runtime | None = None,
        hosts: Sequence[DockerHost | str] = (),
    ) -> None:
        """As ``DockerEngine``'s, and ``hosts``: several engines (``DockerHost``s or DOCKER_HOST
        strings) instead of ``base_url``; empty here (given any, ``__new__`` made a pool)."""
        super().__init__(image=image, base_url=base_url, pull=pull, runtime=runtime)

    @part(Capability.PTY)
    def terminals(self) -> DockerTerminals:
        return DockerTerminals(self.connect, self._command_user, self._channel_path, self._spool)

    @part(Capability.SNAPSHOT)
    def snapshotter(self) -> DockerSnapshotter:
        """Snapshots are images committed from running containers (``_snapshot``); a pool holds
        none, as it holds no capturer (an image lives on one engine)."""
        keys = self._main_keys
        return DockerSnapshotter(self._call, self.connect, self._inspect, self._spool, self._start, keys.arm)
