"""The Kubernetes fake's pod network: Services, and the egress policies it enforces.

Every pod runs on a docker network of its namespace (a bridge: it reaches out), under the names
of the Services that select it (network aliases), so a Service's name resolves in the namespace
as cluster DNS resolves it. A pod that a NetworkPolicy restricts to egress to other pods (rules
whose peers are all ``podSelector``s, besides DNS-only rules) runs instead on an *internal* docker
network of that selector, which the selected pods join too (under their Services' names): it
reaches them and nothing else, as a CNI that enforces policies would. A deny-all egress policy is
``--network none``. Other egress rules (``ipBlock``, ``namespaceSelector``) are stored, not
enforced: such a pod is on its namespace's network."""

from __future__ import annotations

import hashlib
import json
import threading
from typing import TYPE_CHECKING, Any

from fakes import docker
from fakes.kubernetes._pods import OWNER_LABEL

if TYPE_CHECKING:
    from fakes.kubernetes import KubernetesFake

_made = threading.RLock()  # one creation of a docker network at a time


def services(fake: KubernetesFake, method: str, ns: str, name: str | None, body: Any) -> tuple[int, Any]:
    """``/api/v1/namespaces/{ns}/services[/{name}]``: create, get, delete (list is the caller's)."""
    with fake.cond:
        if name is None and method == "POST":
            service = dict(body or {})
            key = (ns, str((service.get("metadata") or {}).get("name")))
            if key in fake.services:
                return 409, ("AlreadyExists", f'services "{key[1]}" already exists')
            service["metadata"] = {**service.get("metadata", {}), "namespace": ns, "resourceVersion": "1"}
            service["spec"] = {**service.get("spec", {}), "clusterIP": "10.96.0.1", "type": "ClusterIP"}
            fake.services[key] = service
            return 201, service
        found = fake.services.get((ns, str(name)))
        if found is None:
            return 404, ("NotFound", f'services "{name}" not found')
        if method == "DELETE":
            del fake.services[(ns, str(name))]
        return 200, found


def _selects(selector: dict[str, str], pod: dict[str, Any]) -> bool:
    labels = pod["metadata"].get("labels") or {}
    return all(labels.get(k) == v for k, v in selector.items())


def _aliases(fake: KubernetesFake, ns: str, pod: dict[str, Any]) -> list[str]:
    """The names of ``ns``'s Services that select ``pod``."""
    found = list(fake.services.items())
    return [
        n
        for (s_ns, n), svc in found
        if s_ns == ns and _selects((svc.get("spec") or {}).get("selector") or {}, pod)
    ]


def _egress_rules(fake: KubernetesFake, ns: str, pod: dict[str, Any]) -> list[list[dict[str, Any]]] | None:
    """The egress rules of the policies of ``ns`` with Egress that select ``pod`` (one list per
    policy), or ``None`` when none does."""
    found = None
    for (p_ns, _), policy in list(fake.policies.items()):
        spec = policy.get("spec") or {}
        wanted = (spec.get("podSelector") or {}).get("matchLabels") or {}
        if p_ns == ns and _selects(wanted, pod) and "Egress" in (spec.get("policyTypes") or []):
            found = (found or []) + [list(spec.get("egress") or [])]
    return found


def _dns_only(rule: dict[str, Any]) -> bool:
    ports = rule.get("ports") or []
    return not rule.get("to") and bool(ports) and all(p.get("port") == 53 for p in ports)


def plan(fake: KubernetesFake, ns: str, pod: dict[str, Any]) -> tuple[str, list[str]]:
    """(the docker network ``pod`` starts on, its aliases there), networks made as needed."""
    policies = _egress_rules(fake, ns, pod)
    if policies is not None and any(not rules for rules in policies):
        return "none", []  # a policy that allows no egress at all
    rules = [r for rules in policies or [] for r in rules if not _dns_only(r)]
    peers = [peer for r in rules for peer in r.get("to") or [{}]]
    selectors = [p["podSelector"].get("matchLabels") or {} for p in peers if set(p) == {"podSelector"}]
    distinct = {json.dumps(s, sort_keys=True) for s in selectors}
    if rules and len(selectors) == len(peers) and len(distinct) == 1:
        return _internal(fake, ns, selectors[0]), []  # enforced: only the selected pods are reachable
    return _network(fake, f"k8s-fake-{fake.fake_id}-{ns}", internal=False), _aliases(fake, ns, pod)


def joined(fake: KubernetesFake, ns: str, pod: dict[str, Any], container: str) -> None:
    """After ``pod`` started (as ``container``): onto the internal networks whose selector picks it."""
    for network, (n_ns, selector) in list(fake.networks.items()):
        if n_ns == ns and _selects(selector, pod):
            _connect(network, container, _aliases(fake, ns, pod))


def _internal(fake: KubernetesFake, ns: str, selector: dict[str, str]) -> str:
    """The internal network of ``selector``'s pods in ``ns``, made with the pods already running
    that it selects connected."""
    digest = hashlib.sha256(json.dumps([ns, selector], sort_keys=True).encode()).hexdigest()[:12]
    name = f"k8s-fake-{fake.fake_id}-{digest}"
    with _made:  # the network made and its peers connected before any pod starts on it
        if name not in fake.networks:
            _network(fake, name, internal=True)
            with fake.cond:
                fake.networks[name] = (ns, selector)
                peers = [p for (p_ns, _), p in fake.pods.items() if p_ns == ns and p.get("_container")]
            for peer in peers:
                if _selects(selector, peer):
                    _connect(name, peer["_container"], _aliases(fake, ns, peer))
    return name


def _network(fake: KubernetesFake, name: str, *, internal: bool) -> str:
    with _made:
        if docker.docker("network", "inspect", name).returncode != 0:
            flags = ["--internal", "-o", "com.docker.network.bridge.inhibit_ipv4=true"] if internal else []
            made = docker.docker(
                "network", "create", *flags, "--label", f"{OWNER_LABEL}={fake.fake_id}", name
            )
            if made.returncode != 0:
                raise RuntimeError(made.stderr.decode(errors="replace").strip())
    return name


def _connect(network: str, container: str, aliases: list[str]) -> None:
    flags = [arg for alias in aliases for arg in ("--alias", alias)]
    docker.docker("network", "connect", *flags, network, container)  # already on it: nothing to do


def remove_networks(fake_id: str) -> None:
    """Remove the docker networks the fake ``fake_id`` made (after its containers)."""
    found = docker.docker("network", "ls", "-q", "--filter", f"label={OWNER_LABEL}={fake_id}")
    names = found.stdout.decode().split()
    if names:
        docker.docker("network", "rm", *names)
