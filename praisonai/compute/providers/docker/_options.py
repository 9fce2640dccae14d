"""Docker's provider options, default image and abilities: one definition for ``DockerEngine``
(one engine) and ``DockerPool`` (several), which ``DockerCompute`` makes from the same options."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from praisonai._types import Capability
from praisonai.compute.config import Runtime
from praisonai.compute.options import ProviderOptions
from praisonai.compute.providers.docker._client import DockerHost

DEFAULT_IMAGE = "praisonai-sandbox:latest"
BUILD_HINT = (
    "build it offline with `sudo images/build-offline.sh` (Debian packages only), "
    "or `docker build -t praisonai-sandbox:latest images/` where a registry is reachable"
)
#: What an engine offers; a pool offers the same but captures (they are per engine).
CAPABILITIES = frozenset(
    {
        Capability.IMAGE,
        Capability.CPU_LIMIT,
        Capability.MEMORY_LIMIT,
        Capability.GPU,
        Capability.NETWORK_NONE,
        Capability.NETWORK_ALLOWLIST,  # an internal network behind an egress proxy (_egress)
        Capability.MOUNTS,
        Capability.PACKAGES,
        Capability.ISOLATION,
        Capability.SELF_STOP,
        Capability.RUNC,
        Capability.GVISOR,  # when the engine has runsc registered; checked at each start
    }
)


class DockerOptions(ProviderOptions):
    """``DockerCompute``'s options; ``base_url`` only when given (else a process reads ``$DOCKER_HOST``)."""

    type: Literal["docker"] = "docker"
    image: str = Field(default=DEFAULT_IMAGE, min_length=1)
    base_url: str | None = None
    pull: bool = True
    hosts: tuple[DockerHost, ...] = ()  # a pool of engines (DockerPool), instead of base_url
    runtime: Runtime | None = None


def docker_options(
    image: str | None,
    base_url: str | None,
    pull: bool,
    runtime: Runtime | None,
    hosts: Sequence[DockerHost | str],
) -> DockerOptions:
    """The options a constructor was given: ``image`` else ``$PRAISONAI_DOCKER_IMAGE`` else the
    sandbox image; a host as a DOCKER_HOST string or a ``DockerHost``. docker-py is not loaded
    here: on first use (``_client.sdk``), without paramiko."""
    image = image or os.environ.get("PRAISONAI_DOCKER_IMAGE") or DEFAULT_IMAGE
    pool = [{"url": h} if isinstance(h, str) else h for h in hosts]
    given = {"image": image, "base_url": base_url, "pull": pull, "runtime": runtime, "hosts": pool}
    return DockerOptions.parse(given)
