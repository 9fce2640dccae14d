"""The OCI runtime an instance runs under (``runc``, or ``runsc`` for gVisor), and the proof that it
does: never a silent fallback to runc.

The engine runs whatever runtime the create request names, so the request is not trusted (a
compatible engine may ignore it: Podman's compat API does). Before anything is made, the engine
must list the runtime; after the container starts, its kernel must say that it is gVisor (its
``dmesg`` opens with "Starting gVisor..."; under runc ``dmesg`` is refused, as CAP_SYSLOG is
dropped), and with ``network: unrestricted`` it must have an interface besides loopback. (The Debian gVisor
build starts on kernel 6.x only with the runtime argument ``--network=host``, gVisor passing
network calls to the host kernel inside the container's own network namespace, or
``--network=none``, no network at all: see docs/python.md, *Isolation runtimes*.) Otherwise the
container is removed and the provision fails with one sentence.
docker-py is imported lazily: this module loads without it.
"""

from __future__ import annotations

from typing import Any

from praisonai._errors import ConfigError, ProvisionError
from praisonai.compute.config import ComputeConfig, Runtime

#: How the gVisor sentry opens its kernel log (every gVisor release so far).
GVISOR_BANNER = "Starting gVisor"
#: One exec after start: the kernel log. With a network asked for, a shell adds a separator and
#: the interfaces; without, dmesg runs alone, as every process start is dear under gVisor (the
#: four-process pipeline takes twice as long as dmesg alone, ~100 ms more per provision here).
_PROBE = ["dmesg"]
_PROBE_NETWORK = ["/bin/sh", "-c", "dmesg 2>&1 | head -n 5; echo @@; cat /proc/net/dev 2>&1"]
REGISTER_HINT = (
    'register it in /etc/docker/daemon.json ("runtimes": {"runsc": {"path": "/usr/bin/runsc", '
    '"runtimeArgs": ["--network=host"]}}) and reload dockerd (SIGHUP); see docs/python.md'
)


def chosen(provider_runtime: Runtime | None, cfg: ComputeConfig) -> Runtime | None:
    """The runtime an instance of ``cfg`` runs under: the config's, else the provider's.

    Raises:
        ConfigError: both name one, and not the same (a config never weakens the provider's choice,
            nor is it silently overridden).
    """
    if cfg.runtime and provider_runtime and cfg.runtime != provider_runtime:
        raise ConfigError(
            f"runtime {cfg.runtime!r} was asked for, but this docker provider was made with "
            f"runtime={provider_runtime!r}; use a provider made without one, or the same",
            op="provision",
        )
    return cfg.runtime or provider_runtime


def check_registered(api: Any, runtime: Runtime | None, listed: set[str]) -> None:
    """Refuse before anything is made when the engine does not list ``runtime`` (blocking).
    ``listed``: the runtimes this engine listed before (its caller keeps one set per engine), not
    asked again: ``confirm`` after every start still catches one unregistered since.

    Raises:
        ProvisionError: the engine has no such runtime.
    """
    if runtime is None or runtime == "runc" or runtime in listed:
        return  # runc is every engine's own; an engine without it starts nothing at all
    known = sorted((api.info().get("Runtimes") or {}).keys())
    if runtime not in known:
        raise ProvisionError(
            f"the Docker engine has no {runtime!r} runtime (it has {', '.join(known) or 'none'}), "
            f"so the instance would not run under gVisor: {REGISTER_HINT}",
            op="provision",
        )
    listed.add(runtime)


def confirm(api: Any, container: str, runtime: Runtime | None, cfg: ComputeConfig) -> None:
    """Check that the started ``container`` really runs under ``runtime`` (blocking); only gVisor
    is checked (runc is what an engine falls back to, so there is nothing to prove).

    Raises:
        ProvisionError: it is not gVisor, or has no network although ``cfg`` asks for one. The
            caller removes the container.
    """
    if runtime != "runsc":
        return
    network = cfg.network == "unrestricted"
    kernel_log, _, interfaces = _probe(api, container, network).partition("@@")
    if GVISOR_BANNER not in kernel_log:
        shown = kernel_log.strip().splitlines()[:1] or ["nothing"]
        raise ProvisionError(
            f"the instance was asked to run under gVisor (runsc) but its kernel is not gVisor "
            f"(dmesg said: {shown[0][:120]!r}); it was removed rather than run under runc",
            op="provision",
        )
    if network and not _has_interface(interfaces):
        raise ProvisionError(
            "under this engine's runsc the instance has no network (its runtimeArgs say "
            "--network=none); ask for network='none', or register runsc with --network=host",
            op="provision",
        )


def _probe(api: Any, container: str, network: bool) -> str:
    """The probe's output, stdout and stderr together (with ``network``, the interfaces too)."""
    argv = _PROBE_NETWORK if network else _PROBE
    exec_id = api.exec_create(container, argv, stdout=True, stderr=True)["Id"]
    output: bytes = api.exec_start(exec_id)
    return output.decode("utf-8", "replace")


def _has_interface(proc_net_dev: str) -> bool:
    """Whether ``/proc/net/dev`` lists an interface besides loopback."""
    names = [line.split(":")[0].strip() for line in proc_net_dev.splitlines() if ":" in line]
    return any(name != "lo" for name in names)
