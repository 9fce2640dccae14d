"""``DockerCompute``: the one name users, the registry and the ledger use for docker.

``DockerCompute(...)`` makes a :class:`~._engine.DockerEngine` (one engine: ``base_url``, else
``$DOCKER_HOST``) or, given ``hosts``, a :class:`~._pool.DockerPool` (several engines, each held
as a ``DockerEngine`` and spoken to through its provider primitives). Both are ``DockerCompute``s;
what they share (name, options, the one-shot rule) is written here, and each holds its own
behaviour: no class switches between the two.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field

from praisonai._types import Capability
from praisonai.compute.base import ComputeProvider
from praisonai.compute.channel import CHANNEL_CAPABILITIES, ChannelMixin
from praisonai.compute.config import ComputeConfig, Runtime
from praisonai.compute.options import ProviderOptions
from praisonai.compute.providers.docker import _runtime
from praisonai.compute.providers.docker._client import DockerHost, load_sdk

DEFAULT_IMAGE = "praisonai-sandbox:latest"
BUILD_HINT = (
    "build it offline with `sudo images/build-offline.sh` (Debian packages only), "
    "or `docker build -t praisonai-sandbox:latest images/` where a registry is reachable"
)


class DockerOptions(ProviderOptions):
    """``DockerCompute``'s options; ``base_url`` only when given (else a process reads ``$DOCKER_HOST``)."""

    type: Literal["docker"] = "docker"
    image: str = Field(default=DEFAULT_IMAGE, min_length=1)
    base_url: str | None = None
    pull: bool = True
    hosts: tuple[DockerHost, ...] = ()  # a pool of engines (DockerPool), instead of base_url
    runtime: Runtime | None = None


class DockerCompute(ChannelMixin, ComputeProvider):
    """Docker compute: one engine (``base_url``, else ``$DOCKER_HOST``), or several (``hosts``).

    Constructing it makes a ``DockerEngine``, or with ``hosts`` a ``DockerPool``: both are this
    class, so ``DockerCompute(...)``, ``DockerCompute.from_options`` and the registry's
    ``"docker"`` build either from the same options."""

    name = "docker"
    options_model = DockerOptions
    requires = ("docker",)
    extra = "docker"
    capabilities = CHANNEL_CAPABILITIES | frozenset(
        {
            Capability.IMAGE,
            Capability.CPU_LIMIT,
            Capability.MEMORY_LIMIT,
            Capability.GPU,
            Capability.NETWORK_NONE,
            Capability.MOUNTS,
            Capability.PACKAGES,
            Capability.ISOLATION,
            Capability.CAPTURE,
            Capability.SELF_STOP,
            Capability.RUNC,
            Capability.GVISOR,  # when the engine has runsc registered; checked at each start
        }
    )

    def __new__(cls, *, hosts: Sequence[DockerHost | str] = (), **settings: Any) -> DockerCompute:
        """The one place that chooses: ``DockerCompute`` itself is never an instance's class."""
        kind: type[DockerCompute] = cls
        if cls is DockerCompute:
            # Imported here: both subclass this class, so they import this module first.
            from praisonai.compute.providers.docker._engine import DockerEngine
            from praisonai.compute.providers.docker._pool import DockerPool

            kind = DockerPool if hosts else DockerEngine
        return object.__new__(kind)

    def __init__(
        self,
        *,
        image: str | None = None,
        base_url: str | None = None,
        pull: bool = True,
        runtime: Runtime | None = None,
        hosts: Sequence[DockerHost | str] = (),
    ) -> None:
        """``image``: the default image (else ``$PRAISONAI_DOCKER_IMAGE``, else the sandbox image);
        ``base_url``: the engine (else ``$DOCKER_HOST``); ``pull``: may pull a missing public image;
        ``runtime``: when a config names none (``"runsc"``: gVisor, ``_runtime``); ``hosts``: several
        engines (``DockerHost`` or DOCKER_HOST strings), a pool, instead of ``base_url``."""
        load_sdk(base_url)  # before a lazy "import docker" brings paramiko along
        image = image or os.environ.get("PRAISONAI_DOCKER_IMAGE") or DEFAULT_IMAGE
        pool = [{"url": h} if isinstance(h, str) else h for h in hosts]
        given = {"image": image, "base_url": base_url, "pull": pull, "runtime": runtime, "hosts": pool}
        self._options = DockerOptions.parse(given)
        self.default_image = self._options.image
        self.pull = self._options.pull

    @property
    def options(self) -> DockerOptions:
        return self._options

    def runs_once(self, config: object = None) -> bool:
        """Not under gVisor: the command would run before its kernel could be checked."""
        runtime = _runtime.chosen(self._options.runtime, ComputeConfig.coerce(config))
        return runtime != "runsc" and super().runs_once(config)

    def close(self) -> None:
        """Close the clients this provider made for itself (a pool's, and their ssh forwards); it
        connects again on next use. One engine's client is shared process-wide: nothing to close."""
