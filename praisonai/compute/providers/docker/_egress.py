"""Egress allowlists on docker (``network: {allow: [hosts]}``): the instance sits on an *internal*
docker network, which has no route out, and its only way out is a tinyproxy container attached to
that network and to the default bridge, which forwards plain HTTP on port 80 and CONNECT on port
443 to the listed host names only (an IP address is refused at input) and answers 403 to anything
else. The host has no address on the internal network (``inhibit_ipv4``): its own services are out
of reach too. The instance gets ``HTTP(S)_PROXY``.

One network and one proxy per allowlist, engine and home, named from a hash of the sorted hosts
and the home: made with the first instance of that allowlist (under the home's cross-process
lock, so two processes do not race) and removed, under the same lock, once no instance is left on
the network (:func:`sweep`, after each removal). Another home's (another user's, a test's) are
its own: no lock of ours covers them, so we never make, join or sweep them. The proxy's
configuration is in its container's config, written before it starts: nothing on the internal
network can change it (the proxy's rule, shared with kubernetes, is ``compute.egress``).
docker-py is imported lazily."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from praisonai._errors import ProviderUnavailableError
from praisonai._ledger import home_tag
from praisonai._locks import file_lock, try_lock
from praisonai.compute.config import ComputeConfig, NetworkAllow
from praisonai.compute.egress import (
    BUILD_HINT,
    PROXY_COMMAND,
    PROXY_IMAGE,
    check_names,
    normalized,
    proxy_environment,
    proxy_name,
)
from praisonai.compute.egress import instance_environment as proxy_env
from praisonai.compute.lifecycle import LABEL_HOME

LABEL_EGRESS = "praisonai.egress"  # on the network and its proxy: the allowlist's hash


def network_name(hosts: list[str]) -> str:
    """The allowlist's network, and its proxy's container, on this engine for this home."""
    return f"{proxy_name(hosts)}-{home_tag()}"


def allowlist(cfg: ComputeConfig) -> list[str] | None:
    """The config's hosts, sorted and lower-cased, or ``None`` when its network is not an allowlist."""
    if not isinstance(cfg.network, NetworkAllow):
        return None
    takes = (
        "matches host names through its proxy (*.domain for its subdomains), not CIDR blocks or "
        "ports; list the hosts instead"
    )
    return check_names(normalized(cfg.network.allow), "docker", takes)


def network_mode(cfg: ComputeConfig) -> str:
    """The instance's ``network_mode``: none, the default bridge, or its allowlist's internal network."""
    hosts = allowlist(cfg)
    if hosts is not None:
        return network_name(hosts)
    return "none" if cfg.network == "none" else "bridge"


class DockerEgress:
    """``DockerEngine``'s egress part (``compute.abilities.egress``), built from the engine's client
    (``connect``, made on first use) and its way to run a blocking client call (``call``)."""

    def __init__(self, connect: Callable[[], Any], call: Callable[..., Awaitable[Any]]) -> None:
        self.connect = connect
        self.call = call

    def hosts(self, cfg: ComputeConfig) -> list[str] | None:
        """The config's allowlist (:func:`allowlist`)."""
        return allowlist(cfg)

    async def create(
        self, cfg: ComputeConfig, env: dict[str, str] | None, create: Callable[[dict[str, str] | None], Any]
    ) -> None:
        """``create(env)`` the instance's container; for an allowlist, first its network and proxy
        (made if absent), all under the allowlist's lock so no :func:`sweep` removes them
        meanwhile, with the proxy's address added to ``env``."""
        hosts = allowlist(cfg)
        if hosts is None:
            await self.call(create, env)
            return
        name, api = network_name(hosts), self.connect()
        async with file_lock(name):
            try:
                address = await self.call(_ensure, api, name, hosts)
                await self.call(create, {**(env or {}), **proxy_env(address)})
            except BaseException:
                with anyio.CancelScope(shield=True):  # no instance came of it: nothing stays for it
                    await self.call(_remove_if_unused, api, name)
                raise

    async def sweep(self, op: str) -> None:
        """:func:`sweep`, after an instance's removal (a dead daemon is said alike for any ``op``)."""
        await self.call(sweep, self.connect())


def sweep(api: Any) -> None:
    """Remove each egress network of this engine (and its proxy) that no instance is on any more,
    skipping one whose lock is held (an instance of it is being made). Blocking."""
    for network in api.networks(filters={"label": [LABEL_EGRESS, f"{LABEL_HOME}={home_tag()}"]}):
        fd = try_lock(network["Name"])
        if fd is None:
            continue
        try:
            _remove_if_unused(api, network["Name"])
        finally:
            os.close(fd)


def _ensure(api: Any, name: str, hosts: list[str]) -> str:
    """The address of ``name``'s running proxy on its internal network, both made if absent."""
    import docker

    labels = {LABEL_EGRESS: proxy_name(hosts).rsplit("-", 1)[1], LABEL_HOME: home_tag()}
    if not api.networks(names=[name]):
        # inhibit_ipv4: the host takes no address on it, so the instance cannot reach the host either
        options = {"com.docker.network.bridge.inhibit_ipv4": "true"}
        api.create_network(name, "bridge", options, internal=True, labels=labels, check_duplicate=True)
    try:
        state = api.inspect_container(name)["State"]
    except docker.errors.NotFound:
        state = None
    if state is not None and not state.get("Running"):
        api.remove_container(name, force=True)  # a proxy that died: made again below
        state = None
    if state is None:
        _start_proxy(api, name, hosts, labels)
    found = api.inspect_container(name)["NetworkSettings"]["Networks"][name]["IPAddress"]
    return str(found)


def _start_proxy(api: Any, name: str, hosts: list[str], labels: dict[str, str]) -> None:
    import docker

    subnet = api.inspect_network(name)["IPAM"]["Config"][0]["Subnet"]
    env = proxy_environment(hosts, subnet)
    host_config = api.create_host_config(
        network_mode="bridge",  # its way out; no port published
        log_config={"type": "none"},
        cap_drop=["ALL"],
        security_opt=["no-new-privileges:true"],
        read_only=True,
        tmpfs={"/tmp": "size=1m"},
        pids_limit=256,
        mem_limit="128m",
        restart_policy={"Name": "unless-stopped"},
    )
    try:
        api.create_container(
            PROXY_IMAGE,
            command=["sh", "-c", PROXY_COMMAND],
            name=name,
            user="65534:65534",
            labels=labels,
            environment=env,
            host_config=host_config,
        )
    except docker.errors.ImageNotFound:
        why = f"network allowlists need the image {PROXY_IMAGE}, which is not present: {BUILD_HINT}"
        raise ProviderUnavailableError(why, op="provision") from None
    api.connect_container_to_network(name, name)
    api.start(name)


def _remove_if_unused(api: Any, name: str) -> None:
    import docker

    users = api.containers(all=True, filters={"network": name})
    if any(LABEL_EGRESS not in (row.get("Labels") or {}) for row in users):
        return  # an instance is still on it
    with contextlib.suppress(docker.errors.NotFound):
        api.remove_container(name, force=True)
    with contextlib.suppress(docker.errors.NotFound):
        api.remove_network(name)
