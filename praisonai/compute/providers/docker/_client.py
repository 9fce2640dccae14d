"""The Docker engine as docker's provider talks to it: one shared client per engine address, and
the engine's answers (containers, errors) translated into this package's values and errors.
docker-py is imported lazily: this module loads without it."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from praisonai._errors import (
    ConfigError,
    ExecError,
    ImageNotFoundError,
    InstanceNotFoundError,
    ProviderUnavailableError,
    ProvisionError,
)
from praisonai._files import check_regular_file
from praisonai._types import InstanceInfo, InstanceStatus
from praisonai.compute.lifecycle import LABEL_CREATED, LABEL_IDLE_ACTION, LABEL_INSTANCE, LABEL_PROVIDER

_STATUS = {
    "created": InstanceStatus.PROVISIONING,
    "running": InstanceStatus.RUNNING,
    "paused": InstanceStatus.PAUSED,  # frozen (``_pause``)
    "restarting": InstanceStatus.PROVISIONING,
    "removing": InstanceStatus.STOPPING,
    "exited": InstanceStatus.STOPPED,  # PAUSED when made to be kept (info_of)
    "dead": InstanceStatus.ERROR,
}

T = TypeVar("T")


class EngineCall(Protocol):
    """An engine's way to run one blocking docker-py call (``DockerEngine._call``), given to its
    parts: in a worker thread, a dead daemon said as ``ProviderUnavailableError``."""

    async def __call__(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T: ...


_clients: dict[str | None, Any] = {}
#: The API version a TLS client starts with (it cannot ask the engine before its CA is in place);
#: docker 20.10 and later speak it.
_API_VERSION = "1.41"


def container_name(instance_id: str) -> str:
    return f"praisonai_{instance_id}"


_clients_lock = threading.Lock()


def shared_client(base_url: str | None) -> Any:
    """One client (and connection pool) per engine, so providers and sandboxes reuse sockets."""
    import docker

    with _clients_lock:
        if base_url not in _clients:
            try:
                where = base_url or os.environ.get("DOCKER_HOST", "")
                if where.startswith("ssh://"):  # through an OpenSSH forward (_tunnel), as in a pool
                    _clients[base_url] = engine_client(DockerHost(url=where))
                elif base_url:
                    _clients[base_url] = docker.APIClient(base_url=base_url, max_pool_size=64)
                else:
                    _clients[base_url] = docker.from_env(max_pool_size=64).api
            except docker.errors.DockerException as exc:
                raise ProviderUnavailableError(daemon_down(exc, base_url), op="connect") from None
        return _clients[base_url]


@contextlib.contextmanager
def start_errors(image: str) -> Iterator[None]:
    """The engine's refusal to create or start a container, as one sentence."""
    import docker

    try:
        yield
    except docker.errors.APIError as exc:
        raise ProvisionError(f"docker could not start {image}: {explain(exc)}", op="provision") from None


@contextlib.contextmanager
def exec_errors(instance_id: str) -> Iterator[None]:
    """The engine's refusal to start an exec in the instance, as this package's errors."""
    import docker
    import requests

    try:
        yield
    except docker.errors.NotFound:
        raise InstanceNotFoundError(f"no docker instance {instance_id!r}", op="exec") from None
    except docker.errors.APIError as exc:
        if exc.status_code == 409:  # killed, or ended by its watchdog, and being removed
            message = f"docker instance {instance_id} is no longer running (stopped or removed)"
            raise InstanceNotFoundError(message, op="exec") from None
        raise ExecError(f"docker could not exec in {instance_id}: {explain(exc)}", op="exec") from None
    except requests.exceptions.ConnectionError as exc:
        raise ProviderUnavailableError(daemon_down(exc), op="exec") from None


#: How long a stop waits for a removal someone else began (the engine's ``auto_remove`` of a
#: container that just ended, another stop) before it says the container may remain.
REMOVAL_WAIT_S = 30


def remove_container(api: Any, name: str) -> bool:
    """Remove the container ``name`` with its volumes (blocking); True if it existed. Returns only
    once it is gone, so that a stop that answers leaves nothing behind even when a removal was
    already in progress.

    Raises:
        ProviderUnavailableError: a removal in progress did not finish within ``REMOVAL_WAIT_S``.
    """
    import docker
    import requests

    try:
        api.remove_container(name, force=True, v=True)
        return True
    except docker.errors.NotFound:
        return False
    except docker.errors.APIError as exc:
        if exc.status_code != 409:  # 409: removal already in progress
            raise
    try:
        api.wait(name, timeout=REMOVAL_WAIT_S, condition="removed")
    except docker.errors.NotFound:
        pass  # gone before the wait began
    except requests.exceptions.ReadTimeout:
        message = f"docker container {name} was still being removed after {REMOVAL_WAIT_S} s; it may remain"
        raise ProviderUnavailableError(message, op="shutdown") from None
    return True


def pull_image(api: Any, image: str, *, allowed: bool, hint: str) -> None:
    """Pull a missing ``image`` (blocking), where ``allowed``; ``hint`` says how to build it instead.

    Raises:
        ImageNotFoundError: not allowed, or the pull failed (no registry may be reachable).
    """
    import docker

    if not allowed:
        raise ImageNotFoundError(f"image {image} is not present: {hint}", op="provision")
    try:
        api.pull(image)
    except docker.errors.APIError as exc:
        raise ImageNotFoundError(
            f"image {image} is not present and could not be pulled ({explain(exc)}); "
            f"no registry may be reachable here: {hint}",
            op="provision",
        ) from None


def containers_of(api: Any, provider: str) -> list[InstanceInfo]:
    """The ``provider``'s containers on the engine of ``api``, as they are (blocking: one call)."""
    rows = api.containers(all=True, filters={"label": f"{LABEL_PROVIDER}={provider}"})
    return [info_of(row) for row in rows]


def info_of(container: dict[str, Any]) -> InstanceInfo:
    """An InstanceInfo from either ``inspect_container`` or a ``containers()`` list row."""
    labels = container.get("Labels") or container.get("Config", {}).get("Labels") or {}
    state = container.get("State")
    status = state.get("Status") if isinstance(state, dict) else state
    name = (container.get("Name") or (container.get("Names") or [""])[0]).lstrip("/")
    return InstanceInfo(
        instance_id=labels.get(LABEL_INSTANCE, name),
        provider="docker",
        status=_status(str(status), labels),
        endpoint=f"docker://{name}",
        created_at=float(labels.get(LABEL_CREATED, 0)),
        labels=labels,
        metadata={"image": container.get("Image") or container.get("Config", {}).get("Image", "")},
    )


def _status(state: str, labels: dict[str, str]) -> InstanceStatus:
    """The engine's state as ours: a stopped container made to be kept (``_pause``) is paused."""
    if state == "exited" and labels.get(LABEL_IDLE_ACTION) == "pause":
        return InstanceStatus.PAUSED
    return _STATUS.get(state, InstanceStatus.ERROR)


def daemon_down(exc: Exception, base_url: str | None = None) -> str:
    where = base_url or os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    return f"the Docker engine at {where} does not answer (is dockerd running?): {exc}"


def explain(exc: Exception) -> str:
    return str(getattr(exc, "explanation", None) or exc)


def file_error(exc: Exception, shown: str) -> Exception:
    text = explain(exc)
    if "not a directory" in text:
        return NotADirectoryError(f"a parent of {shown} is not a directory")
    if "is a directory" in text.lower():
        return IsADirectoryError(f"{shown} is a directory")
    return ExecError(f"docker could not write {shown}: {text}", op="write_file")


def load_sdk(base_url: str | None) -> None:
    """Import docker-py without paramiko.

    docker-py imports paramiko when it loads, for its own ``ssh://`` transport only; that is a
    third of its import time, which every short-lived process (a one-shot run) would pay. This
    provider never uses that transport (an ``ssh://`` engine goes through an OpenSSH forward,
    ``_tunnel``). paramiko stays importable afterwards (the SSH provider imports it itself).
    """
    if "docker" in sys.modules:
        return
    hidden = "paramiko" not in sys.modules
    if hidden:
        sys.modules["paramiko"] = None  # type: ignore[assignment]  # "import paramiko" -> ImportError
    try:
        import docker  # noqa: F401
    except ImportError:
        pass  # the provider names the missing extra itself
    finally:
        if hidden:
            del sys.modules["paramiko"]


def sdk() -> Any:
    """docker-py, loaded on first use (``load_sdk``): a provider is made without it, so a process
    that only talks to an instance over its main channel (``_main``) never pays its import."""
    load_sdk(None)
    import docker

    return docker


def get_archive(api: Any, container: str, target: str) -> Iterator[bytes] | None:
    """``target`` as a stream of tar chunks (blocking); ``None`` when the engine finds nothing
    there (no such path, or no such container)."""
    import docker

    try:
        stream, _ = api.get_archive(container, target)
    except docker.errors.NotFound:
        return None
    chunks: Iterator[bytes] = iter(stream)
    return chunks


class DockerHost(BaseModel):
    """One engine of a pool: ``url`` in DOCKER_HOST syntax; ``tls`` a directory holding
    ``ca.pem``, ``cert.pem`` and ``key.pem`` (as ``DOCKER_CERT_PATH``) for a ``tcp://`` engine.
    For an ``ssh://[user@]host[:port]`` engine (reached through an OpenSSH forward, ``_tunnel``):
    ``socket``, the engine's socket on that host (default ``/var/run/docker.sock``), and
    ``ssh_config``, an ssh_config(5) file to use instead of ``~/.ssh/config``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str = Field(pattern=r"^(unix|tcp|ssh)://.+")
    tls: str | None = None
    socket: str | None = None
    ssh_config: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_url(cls, value: object) -> object:
        return {"url": value} if isinstance(value, str) else value  # a bare DOCKER_HOST string


def _tls_files(host: DockerHost) -> tuple[str, str, str]:
    """``ca.pem``, ``cert.pem`` and ``key.pem`` of ``host.tls``, each a regular file (ssl opens them
    by path, and would block forever on a FIFO), or one sentence naming what is wrong."""
    files = tuple(str(Path(host.tls or "") / name) for name in ("ca.pem", "cert.pem", "key.pem"))
    for path in files:
        try:
            check_regular_file(path, "TLS file")
        except OSError as exc:
            raise ConfigError(
                f"docker host {host.url}: tls {host.tls} must be a directory holding ca.pem, cert.pem and "
                f"key.pem (as DOCKER_CERT_PATH), but {path}: {exc.strerror or exc}",
                op="config",
            ) from None
        except ConfigError as exc:
            raise ConfigError(f"docker host {host.url}: {exc}", op="config") from None
    return files[0], files[1], files[2]


def engine_client(host: DockerHost, *, connect: bool = True) -> Any:
    """docker-py's ``APIClient`` for ``host`` (which asks the engine its API version, blocking;
    for an ``ssh://`` host, after starting its forward); without ``connect``, only the checks,
    and ``None``.

    Raises:
        ConfigError: an ``ssh://`` address ssh could misread, TLS on a non-tcp host, or ssh
            settings on a non-ssh one.
        ProviderUnavailableError: ssh could not forward an ``ssh://`` host's engine.
    """
    import docker

    if host.tls is not None and not host.url.startswith("tcp://"):
        raise ConfigError(f"docker host {host.url}: tls applies to tcp:// engines only", op="config")
    if host.url.startswith("ssh://"):
        from praisonai.compute.providers.docker import _tunnel

        to = _tunnel.target(host.url, host.socket, host.ssh_config)
        return _tunnel.client(to) if connect else None
    if host.socket is not None or host.ssh_config is not None:
        message = f"docker host {host.url}: socket and ssh_config apply to ssh:// engines only"
        raise ConfigError(message, op="config")
    tls = None
    if host.tls is not None:
        certs = _tls_files(host)
        try:
            tls = docker.tls.TLSConfig(client_cert=(certs[1], certs[2]), ca_cert=certs[0], verify=True)
        except docker.errors.TLSParameterError as exc:
            raise ConfigError(
                f"docker host {host.url}: tls {host.tls} is not usable: {exc}", op="config"
            ) from exc
    if not connect:
        return None
    url = host.url.replace("tcp://", "https://", 1) if tls else host.url
    api = docker.APIClient(base_url=url, tls=tls, max_pool_size=64, version=_API_VERSION if tls else None)
    if tls is not None:
        # requests prefers $REQUESTS_CA_BUNDLE / $CURL_CA_BUNDLE to the session's CA when it reads
        # the environment: this engine's CA would never be used. (APIClient is a requests.Session.)
        api.trust_env = False
    return api


def unusable(connect: Callable[[], Any], image: str, hint: str) -> str | None:
    """Why the engine (reached through ``connect``) cannot provision now: it does not answer, or
    lacks ``image`` (``hint`` says how to build it); ``None`` when it can."""
    docker = sdk()

    try:
        connect().ping()
        connect().inspect_image(image)
    except ProviderUnavailableError as exc:
        return str(exc)
    except docker.errors.ImageNotFound:
        return f"image {image} is not present: {hint}"
    except Exception as exc:  # any other engine failure is a reason, reported as such
        return f"the Docker engine failed: {exc}"
    return None


def close_client(api: Any, host: DockerHost) -> None:
    """Close a pool host's client ``api`` and release its ssh forward (shared by this process's
    pools over that host, stopped with the last of them)."""
    from praisonai.compute.providers.docker import _tunnel

    api.close()
    if host.url.startswith("ssh://"):
        _tunnel.release(_tunnel.target(host.url, host.socket, host.ssh_config))
