"""Docker compute: an instance is a hardened, labelled container that idles until removed.

``DockerCompute`` (``_compute``) is the provider users write, for one engine and for several: it is
a ``DockerEngine`` (``_engine``: one engine, ``base_url`` else ``$DOCKER_HOST``) that, given
``hosts``, makes a ``DockerPool`` instead (``_pool``: one ``DockerEngine`` per host, each primitive
forwarded to the instance's). Parts: ``_options`` (options, image, abilities), ``_client`` (the
engine's client, answers and errors), ``_spec`` (the hardened container), ``_exec``, ``_once``
(one-shot runs), ``_capture``, ``_runtime`` (runc or gVisor, proved), ``_tunnel`` (``ssh://``
engines), ``_ports`` (``expose``); the watchdog is ``compute.watchdog``.
"""

from __future__ import annotations

from praisonai.compute.providers.docker._client import DockerHost, container_name
from praisonai.compute.providers.docker._compute import DockerCompute
from praisonai.compute.providers.docker._engine import DockerEngine
from praisonai.compute.providers.docker._options import BUILD_HINT, DEFAULT_IMAGE, DockerOptions
from praisonai.compute.providers.docker._pool import DockerPool

__all__ = [
    "BUILD_HINT",
    "DEFAULT_IMAGE",
    "DockerCompute",
    "DockerEngine",
    "DockerHost",
    "DockerOptions",
    "DockerPool",
    "container_name",
]
