"""Allowlists of host names on kubernetes: the egress proxy of ``compute.egress`` as a Pod.

A NetworkPolicy matches IP blocks only, so the host names of an allowlist go through a tinyproxy
Pod of their own (one per namespace and allowlist, named from a hash of the sorted hosts, as
docker names its proxy) behind a Service of the same name. The instance's NetworkPolicy allows
egress to DNS, to the pods of that proxy on its port, and to the allowlist's IP blocks, nothing
else; the proxy's own policy lets it reach out but accepts connections only from the instances of
that allowlist (label :data:`LABEL_CLIENT`). The instance gets ``HTTP(S)_PROXY`` (both cases) at
the Service. Like every NetworkPolicy, this holds only where the cluster's network plugin enforces
policies.

Several hosts may share a cluster, so no local lock orders the processes: the proxy's objects are
created after the instance's pod and a create that meets ``409 AlreadyExists`` takes the existing
object (when it is this proxy's). :func:`sweep` removes a proxy whose allowlist has no live
instance, then looks again and makes it again when an instance came meanwhile: whichever order a
creation and a sweep interleave in, an instance whose provisioning returned has its proxy."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Awaitable, Callable
from typing import Any

from kubernetes import client

from praisonai._errors import (
    ConfigError,
    ImageNotFoundError,
    InstanceNotFoundError,
    ProviderUnavailableError,
    ProvisionError,
)
from praisonai.compute.config import ComputeConfig, NetworkAllow
from praisonai.compute.egress import (
    BUILD_HINT,
    PROXY_COMMAND,
    PROXY_PORT,
    check_names,
    instance_environment,
    normalized,
    proxy_environment,
    proxy_name,
)
from praisonai.compute.providers.kubernetes import _adopt, _pod, _wait
from praisonai.compute.providers.kubernetes._options import KubernetesOptions

LABEL_PROXY = "praisonai.egress"  # on the proxy's pod, Service and policy: the proxy's name
LABEL_CLIENT = "praisonai.egress-client"  # on an instance pod behind a proxy: the proxy's name
HOSTS = "praisonai.egress-hosts"  # the instance pod's annotation: its allowlist's host names
_LIVE = ("Pending", "Running")
_TRIES = 2  # waits for the proxy: a sweep may remove it once while it starts (then made again)


def hosts_of(cfg: ComputeConfig) -> list[str] | None:
    """The allowlist's host names (its entries that are not IP blocks), normalized (``[]`` when it
    has none); ``None`` when the network is no allowlist. Raises ConfigError for an entry the proxy
    cannot match."""
    if not isinstance(cfg.network, NetworkAllow):
        return None
    hosts = normalized([a for a in cfg.network.allow if not _pod.is_ip(a)])
    takes = (
        "takes IP blocks (as NetworkPolicies) and host names (through its egress proxy; *.domain "
        "for its subdomains), not ports"
    )
    return check_names(
        hosts, "kubernetes", takes, "write an IP block as a.b.c.d[/n] or IPv6, or list the host's name"
    )


def bind(body: dict[str, Any], policy: dict[str, Any] | None, hosts: list[str] | None) -> None:
    """Put the instance of pod ``body`` and NetworkPolicy ``policy`` behind ``hosts``' proxy: the
    pod's label and annotation, its proxy variables (over its own), and the policy's rule to the
    proxy's pods. Nothing when ``hosts`` is empty."""
    if not hosts:
        return
    name = proxy_name(hosts)
    meta = body["metadata"]
    meta["labels"] = {**meta.get("labels", {}), LABEL_CLIENT: name}
    meta["annotations"] = {**meta.get("annotations", {}), HOSTS: ",".join(hosts)}
    box = body["spec"]["containers"][0]
    proxy = instance_environment(name)  # the Service's name, resolved in the namespace
    box["env"] = [e for e in box["env"] if e["name"] not in proxy] + [
        {"name": k, "value": v} for k, v in proxy.items()
    ]
    if policy is not None:
        to = [{"podSelector": {"matchLabels": {LABEL_PROXY: name}}}]
        policy["spec"]["egress"].append({"to": to, "ports": [{"protocol": "TCP", "port": PROXY_PORT}]})


Call = Callable[..., Awaitable[Any]]


class KubernetesEgress:
    """``KubernetesCompute``'s egress part (``compute.abilities.egress``), built from its API client
    (``connect``, made on first use), its ``namespace``, its translated ``read`` and rate-limited
    ``write`` calls (``(op, what, fn, *args)``) and its options (the proxy's image, the waits)."""

    def __init__(
        self,
        connect: Callable[[], Any],
        namespace: Callable[[], str],
        read: Call,
        write: Call,
        options: KubernetesOptions,
    ) -> None:
        self.connect = connect
        self.namespace = namespace
        self.read = read
        self.write = write
        self.options = options

    def hosts(self, cfg: ComputeConfig) -> list[str] | None:
        """The allowlist's host names (:func:`hosts_of`); refused with a warm pool."""
        hosts = hosts_of(cfg)
        if hosts and self.options.warm_pool:
            raise ConfigError(
                "an allowlist of host names puts the pod behind an egress proxy, which a warm pool's "
                "pods (made before the allowlist was known) cannot be; list IP blocks, or drop warm_pool",
                op="provision",
            )
        return hosts

    def bind(self, body: dict[str, Any], policy: dict[str, Any] | None, cfg: ComputeConfig) -> None:
        """Put the instance of pod ``body`` and NetworkPolicy ``policy`` behind the proxy of
        ``cfg``'s host names, when it has any (:func:`bind`)."""
        bind(body, policy, hosts_of(cfg))

    async def after_pod(self, body: dict[str, Any]) -> None:
        """Once the instance of pod ``body`` exists: its proxy, made if absent and ready (nothing
        for an instance that has none). Made after the pod, so that a sweep in between sees the pod."""
        hosts = str(body["metadata"].get("annotations", {}).get(HOSTS, ""))
        if LABEL_CLIENT in body["metadata"].get("labels", {}) and hosts:
            await self.ensure(hosts.split(","), wait=True)

    async def ensure(self, hosts: list[str], *, wait: bool) -> None:
        """``hosts``' Service, proxy policy and proxy pod, each created or (on 409) taken when it
        is this proxy's; with ``wait``, until the proxy pod is ready."""
        name, image = proxy_name(hosts), self.options.egress_image
        for attempt in range(1, _TRIES + 1):
            for kind, body, create, read in self._objects(name, hosts, image):
                await self._create_or_take(
                    f"{kind} {name}", name, functools.partial(create, self.namespace(), body), read
                )
            if not wait:
                return
            try:
                await self.until_ready(name)
                return
            except ImageNotFoundError as exc:
                why = f"allowlists of host names need the image {image} in the cluster: "
                raise ProviderUnavailableError(f"{why}{BUILD_HINT} and load it", op="provision") from exc
            except ProvisionError:
                if attempt == _TRIES:  # removed by a sweep while it started: made again once
                    raise

    async def until_ready(self, name: str) -> None:
        """Until proxy pod ``name`` is ready."""
        o = self.options
        core = client.CoreV1Api(self.connect())
        wait = functools.partial(
            _wait.until_ready, core, self.namespace(), name, o.scheduled_timeout_s, o.ready_timeout_s
        )
        await self.read("provision", f"pod {name}", wait)

    async def _create_or_take(self, what: str, name: str, create: Any, read: Any) -> None:
        try:
            await self.write("provision", what, create)
        except ConfigError as exc:
            if not _adopt.already_exists(exc):
                raise
            found = await self.read("provision", what, read)
            if _adopt.meta_of(found)[0].get(LABEL_PROXY) != name:
                raise ConfigError(
                    f"{what} already exists in the cluster and is not praisonai's egress proxy",
                    op="provision",
                ) from exc

    def _objects(self, name: str, hosts: list[str], image: str) -> list[tuple[str, Any, Any, Any]]:
        """(kind, manifest, create, read) of the proxy's objects, in the order they are made: the
        Service before its pod (whose address it names), the policy before the pod it guards."""
        api = self.connect()
        core, net, ns = client.CoreV1Api(api), client.NetworkingV1Api(api), self.namespace()
        return [
            ("service", service(name), core.create_namespaced_service,
             functools.partial(core.read_namespaced_service, name, ns)),
            ("network policy", proxy_policy(name), net.create_namespaced_network_policy,
             functools.partial(net.read_namespaced_network_policy, name, ns)),
            ("pod", proxy_pod(name, hosts, image), core.create_namespaced_pod,
             functools.partial(core.read_namespaced_pod, name, ns)),
        ]  # fmt: skip

    async def released(self, pod: Any, op: str) -> None:
        """After pod ``pod`` (as its delete answered it) went: :meth:`sweep` when it was behind a
        proxy (that proxy goes with the last instance behind it)."""
        labels = getattr(getattr(pod, "metadata", None), "labels", None) or {}
        if LABEL_CLIENT in labels:
            await self.sweep(op)

    async def sweep(self, op: str) -> None:
        """Remove each proxy of the namespace whose allowlist has no live instance (see the module
        docstring for why this needs no lock)."""
        api = self.connect()
        core, net, ns = client.CoreV1Api(api), client.NetworkingV1Api(api), self.namespace()
        pods = await self.read(op, "the namespace", core.list_namespaced_pod, ns, label_selector=LABEL_PROXY)
        services = await self.read(
            op, "the namespace", core.list_namespaced_service, ns, label_selector=LABEL_PROXY
        )
        for name in sorted({str(o.metadata.labels[LABEL_PROXY]) for o in [*pods.items, *services.items]}):
            if await self.clients(name, op):
                continue
            options = client.V1DeleteOptions(grace_period_seconds=0)
            for what, delete in (
                (f"pod {name}", functools.partial(core.delete_namespaced_pod, name, ns, body=options)),
                (f"service {name}", functools.partial(core.delete_namespaced_service, name, ns)),
                (f"network policy {name}", functools.partial(net.delete_namespaced_network_policy, name, ns)),
            ):
                with contextlib.suppress(InstanceNotFoundError):  # gone already: another sweep's
                    await self.write(op, what, delete)
            if hosts := await self.clients(name, op):  # one came meanwhile: its proxy again
                await self.ensure(hosts, wait=False)

    async def clients(self, name: str, op: str) -> list[str]:
        """The host names of ``name``'s live instances (``[]``: none is live)."""
        core = client.CoreV1Api(self.connect())
        found = await self.read(
            op,
            "the namespace",
            core.list_namespaced_pod,
            self.namespace(),
            label_selector=f"{LABEL_CLIENT}={name}",
        )
        for pod in found.items:
            if pod.status.phase in _LIVE and pod.metadata.deletion_timestamp is None:
                return str((pod.metadata.annotations or {}).get(HOSTS, "")).split(",")
        return []


def service(name: str) -> dict[str, Any]:
    port = {"protocol": "TCP", "port": PROXY_PORT, "targetPort": PROXY_PORT}
    spec = {"selector": {LABEL_PROXY: name}, "ports": [port]}
    return {"apiVersion": "v1", "kind": "Service", "metadata": _meta(name), "spec": spec}


def proxy_policy(name: str) -> dict[str, Any]:
    """The proxy accepts its allowlist's instances only, on its port; it may reach out (its filter
    decides where)."""
    clients = [{"podSelector": {"matchLabels": {LABEL_CLIENT: name}}}]
    spec = {
        "podSelector": {"matchLabels": {LABEL_PROXY: name}},
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [{"from": clients, "ports": [{"protocol": "TCP", "port": PROXY_PORT}]}],
        "egress": [{}],
    }
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta(name),
        "spec": spec,
    }


def proxy_pod(name: str, hosts: list[str], image: str) -> dict[str, Any]:
    """tinyproxy as nobody on a read-only root (its config written to a small emptyDir at /tmp),
    no token, no capabilities, ready once it listens."""
    env = proxy_environment(hosts, None)  # who may connect is the proxy policy's business
    box = {
        "name": "proxy",
        "image": image,
        "command": ["sh", "-c", PROXY_COMMAND],
        "env": [{"name": k, "value": v} for k, v in env.items()],
        "ports": [{"containerPort": PROXY_PORT, "protocol": "TCP"}],
        "readinessProbe": {"tcpSocket": {"port": PROXY_PORT}, "periodSeconds": 1},
        "resources": {
            "requests": {"cpu": "50m", "memory": "64Mi"},
            "limits": {"cpu": "500m", "memory": "128Mi"},
        },
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
            "runAsNonRoot": True,
            "runAsUser": 65534,
            "runAsGroup": 65534,
        },
        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
    }
    spec = {
        "containers": [box],
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "terminationGracePeriodSeconds": 1,
        "volumes": [{"name": "tmp", "emptyDir": {"sizeLimit": "1Mi"}}],
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": _meta(name), "spec": spec}


def _meta(name: str) -> dict[str, Any]:
    return {"name": name, "labels": {LABEL_PROXY: name}}
