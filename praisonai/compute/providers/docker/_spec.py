"""How a docker instance's container is hardened: docker-init as PID 1, every capability dropped
but a minimal set, no-new-privileges, pids/cpu/memory limits, the network and mounts of the
config, and the helper's spool out of every commit. docker-py is imported lazily: this module
loads without it."""

from __future__ import annotations

import os
from typing import Any

from praisonai._errors import ConfigError
from praisonai._ledger import home_tag
from praisonai.compute.config import ComputeConfig, Runtime
from praisonai.compute.lifecycle import LABEL_HOME
from praisonai.compute.providers.docker import _egress
from praisonai.compute.separation import root_capabilities

PIDS_LIMIT = 4096
#: A spool's volume (``spool_volume``) carries this label, and the home's (``LABEL_HOME``).
LABEL_SPOOL = "praisonai.spool"


def check_host_paths(cfg: ComputeConfig) -> None:
    """Refuse a mount whose host path is missing on this machine (a local engine's): the engine
    would create it, as root."""
    for spec in cfg.mount_paths:
        source = spec.split(":")[0]
        if not os.path.exists(source):
            raise ConfigError(
                f"mount {spec!r}: the host path {source} does not exist; create it first "
                f"(docker would create it as root)",
                op="provision",
            )


def host_config(
    api: Any,
    cfg: ComputeConfig,
    runtime: Runtime | None = None,
    *,
    local: bool = True,
    spool: str | None = None,
) -> Any:
    """The engine's host config for an instance of ``cfg`` under ``runtime`` (``None``: the
    engine's default), removed by the engine once it ends unless idleness pauses it (``_pause``).
    Nothing it prints is logged on the host: its stdout is the helper's replies (file contents,
    env) or a one-shot command's output. ``local``: the engine runs on this machine (its mounts'
    host paths are this machine's: see :func:`mounts`). ``spool``: where the instance's helper
    spools, given a volume of its own under runc (:func:`spool_volume`)."""
    volumes = [spool_volume(spool)] if spool is not None and runtime != "runsc" else []
    return api.create_host_config(
        log_config={"type": "none"},
        runtime=runtime,
        init=True,
        auto_remove=not cfg.lifetime.pauses,
        cap_drop=["ALL"],
        cap_add=root_capabilities(cfg),
        security_opt=["no-new-privileges:true"],
        pids_limit=PIDS_LIMIT,
        nano_cpus=int((cfg.cpu or 1) * 1e9),
        mem_limit=f"{cfg.memory_mb or 1024}m",
        network_mode=_egress.network_mode(cfg),
        mounts=mounts(cfg, local=local) + volumes or None,
        device_requests=gpu_request(cfg.gpu),
    )


def mounts(cfg: ComputeConfig, *, local: bool = True) -> list[Any]:
    """The config's ``HOST:INSTANCE[:ro|rw]`` as bind mounts, which the engine refuses for a
    missing host path (the ``binds`` form would create it as root). A local engine is given the
    host path its check resolved, seen unchanged (``ComputeConfig.mount_source``), never the path
    as written: what it mounts is what was checked. Another host's engine is given the path as
    written (it is resolved there).

    Raises:
        ConfigError: a host path changed since it was checked.
    """
    import docker

    found = []
    for spec in cfg.mount_paths:
        source, target, *mode = spec.split(":")
        source = cfg.mount_source(source) if local else source
        found.append(docker.types.Mount(target, source, type="bind", read_only=mode == ["ro"]))
    return found


def spool_volume(spool: str) -> Any:
    """The helper's spool (its commands' output, its background processes' records, the bound env)
    on an anonymous volume: the engine keeps it across a stop (a pause) and removes it with the
    container, and ``docker commit`` never takes a volume, so no capture or snapshot holds it. Empty
    when made (``no_copy``), even from an image that holds a spool (one committed before). One left
    behind by a removal without its volumes (``docker rm -f``) goes with ``gc`` (:func:`sweep`).

    Not under gVisor: its sentry keeps ``/tmp`` (the spool's parent) in its own memory when the
    image's ``/tmp`` is empty, as the sandbox image's is, where no commit sees it; and a mount under
    ``/tmp`` makes ``/tmp`` itself unreadable there (``ls /tmp``: Invalid argument, runsc 2022-12)."""
    import docker

    labels = {LABEL_SPOOL: "1", LABEL_HOME: home_tag()}
    return docker.types.Mount(spool, None, type="volume", no_copy=True, labels=labels)


def sweep(api: Any) -> None:
    """Remove this home's spool volumes that no container uses any more (blocking). Skipped when
    the engine is already pruning (409: another listing of this home, or someone's ``docker volume
    prune``, is at it): the engine runs one prune at a time, and that one sweeps ours too."""
    import docker

    try:
        api.prune_volumes(filters={"label": [LABEL_SPOOL, f"{LABEL_HOME}={home_tag()}"]})
    except docker.errors.APIError as exc:
        if exc.status_code != 409:
            raise


def gpu_request(gpu: str | int | None) -> list[Any] | None:
    if gpu is None:
        return None
    import docker

    count = gpu if isinstance(gpu, int) else -1  # a type name asks for the GPUs there are
    return [docker.types.DeviceRequest(count=count, capabilities=[["gpu"]])]
