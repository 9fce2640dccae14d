"""The cluster connection: the official client from a kubeconfig or in-cluster, its namespace,
a client-side rate limit on writes, and the API server's errors as ours."""

from __future__ import annotations

import contextlib
import copy
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import urllib3
import yaml  # type: ignore[import-untyped]
from kubernetes import client, config
from kubernetes.client import ApiException
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.kube_config import ConfigNode, KubeConfigLoader, KubeConfigMerger

from praisonai import _telemetry
from praisonai._errors import (
    AuthenticationError,
    ConfigError,
    InstanceNotFoundError,
    ProviderUnavailableError,
)
from praisonai._files import read_regular_file
from praisonai._limits import ERROR_DETAIL_CHARS
from praisonai.compute._threads import run_blocking

_SA_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def connect(kubeconfig: str | None, context: str | None, in_cluster: bool) -> tuple[Any, str]:
    """(ApiClient, namespace of the config) from ``kubeconfig`` (else ``$KUBECONFIG`` or
    ``~/.kube/config``) and ``context``, or from the pod's service account with ``in_cluster``."""
    try:
        if in_cluster:
            configuration = client.Configuration()
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
            namespace = _SA_NAMESPACE.read_text().strip() if _SA_NAMESPACE.exists() else "default"
            return client.ApiClient(configuration), namespace
        loader = _loader(kubeconfig, context)
        configuration = client.Configuration()
        loader.load_and_set(configuration)
        contexts, active = loader.list_contexts(), loader.current_context
        chosen = next((c for c in contexts if c["name"] == context), active) if context else active
        return client.ApiClient(configuration), str(
            (chosen.get("context") or {}).get("namespace") or "default"
        )
    except (ConfigException, OSError, yaml.YAMLError) as exc:
        where = "the in-cluster service account" if in_cluster else (kubeconfig or "the default kubeconfig")
        raise ConfigError(f"no usable Kubernetes configuration from {where}: {exc}", op="kubernetes") from exc


def _loader(kubeconfig: str | None, context: str | None) -> Any:
    """The SDK's loader of ``kubeconfig`` (else ``$KUBECONFIG``, a ``:``-separated list, else
    ``~/.kube/config``), its files read once, by us: the SDK's own ``open()`` would block forever
    on a FIFO, and its loader writes refreshed tokens back into the files, which we never want."""
    paths = kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
    merger = _CheckedMerger(paths)  # type: ignore[no-untyped-call]  # the SDK has no annotations
    if merger.config is None:
        raise ConfigException(f"no kubeconfig file found at {paths}")
    loader = KubeConfigLoader  # the SDK has no annotations
    return loader(config_dict=merger.config, config_base_path=None, active_context=context)  # type: ignore[no-untyped-call]


class _CheckedMerger(KubeConfigMerger):
    """The SDK's merge of several kubeconfig files, each read as a regular file or refused."""

    def load_config(self, path: str) -> None:
        data = yaml.safe_load(read_regular_file(path, "kubeconfig"))
        if not isinstance(data, dict):
            raise ConfigException(f"{path} is not a kubeconfig (a YAML mapping)")
        # From here as the SDK's own load_config (kubernetes 36-37): items keep their file's path,
        # against which relative certificate paths resolve.
        if self.config_merged is None:
            merged = copy.deepcopy(data)
            for item in ("clusters", "contexts", "users"):
                merged[item] = []
            self.config_merged = ConfigNode(path, merged, path)  # type: ignore[no-untyped-call]
        for item in ("clusters", "contexts", "users"):
            self._merge(item, data.get(item, []) or [], path)  # type: ignore[no-untyped-call]
        if "current-context" in data:
            self.config_merged.value["current-context"] = data["current-context"]
        self.config_files[path] = data


class WriteLimiter:
    """At most ``per_s`` API writes a second on average, ``burst`` at once: many sandboxes
    started together must not flood the control plane (Harbor and agent-sandbox both hit this)."""

    def __init__(self, per_s: float, burst: int) -> None:
        self._per_s = per_s
        self._burst = float(burst)
        self._tokens = float(burst)
        self._at = time.monotonic()
        self._lock = anyio.Lock()

    async def acquire(self) -> None:
        async with self._lock:  # one waiter at a time: they leave in order
            now = time.monotonic()
            self._tokens = min(self._burst, self._tokens + (now - self._at) * self._per_s)
            self._at = now
            if self._tokens < 1:
                await anyio.sleep((1 - self._tokens) / self._per_s)
                self._at = time.monotonic()
                self._tokens = 1.0
            self._tokens -= 1


async def read_call(op: str, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """One blocking API call in a worker thread, its failures ours (``translated``)."""

    def call() -> Any:
        with translated(op, what):
            return fn(*args, **kwargs)

    return await run_blocking(call)


async def write_call(writes: WriteLimiter, op: str, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """One API write, after the rate limit ``writes``, translated."""
    await writes.acquire()
    return await read_call(op, what, fn, *args, **kwargs)


@contextlib.contextmanager
def translated(op: str, what: str) -> Iterator[None]:
    """The API server's failures as ours (a 404 names ``what``)."""
    _telemetry.vendor_call("kubernetes", op, what)
    try:
        yield
    except ApiException as exc:
        status = int(exc.status or 0)
        said = f"{exc.reason or ''} {exc.body or ''}".strip()[:ERROR_DETAIL_CHARS]
        if status == 404:
            raise InstanceNotFoundError(f"{what} does not exist in the cluster", op=op) from exc
        if status in (401, 403):
            raise AuthenticationError(f"the Kubernetes API refused {op} ({status}): {said}", op=op) from exc
        if status in (400, 409, 422):
            raise ConfigError(f"the Kubernetes API rejected {op} ({status}): {said}", op=op) from exc
        raise ProviderUnavailableError(f"the Kubernetes API failed {op} ({status}): {said}", op=op) from exc
    except (OSError, urllib3.exceptions.HTTPError) as exc:  # the client's transport: urllib3
        raise ProviderUnavailableError(f"the Kubernetes API is unreachable ({op}): {exc}", op=op) from exc
