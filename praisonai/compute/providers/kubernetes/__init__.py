"""Kubernetes compute: an instance is a Pod, driven through the official ``kubernetes`` client.

The pod carries our identity (labels where Kubernetes allows the value, all of it in annotations),
resource requests and limits, ``runtimeClassName`` when configured (gVisor, Kata), no service
account token, no privilege escalation and a read-only root with emptyDirs at the working dir, /tmp
and HOME (switchable off for images that need it). Its helper and watchdog run as root with docker's
few capabilities for root; its commands, sessions, terminals and file requests as uid 1000 with none
(``compute.separation``, as on docker), unless ``command_user='root'``; ``run_as_user`` runs the
whole pod as one uid instead (no capability). ``network: none`` and an allowlist are a NetworkPolicy
made before the pod — it holds only where the cluster's network plugin enforces policies; an
allowlist's host names go through an egress proxy pod of that allowlist (``_egress``).

Its main process is the watchdog that docker instances run (``compute/watchdog.py``): it exits
when the instance is idle or past its ``ttl_s``, ending the pod, which any later
``shutdown``/``gc`` deletes; ``activeDeadlineSeconds`` is the cluster's own backstop for ``ttl_s``.
Exec, processes, sessions and files go through the POSIX-sh helper over ONE ``pods/exec``
WebSocket per instance (``_transport``, ``_channel``), reopened on demand when it drops; a terminal
is an exec of its own with a TTY (``_pty``). Every pod is found again by its labels, from any
process. API writes (create, delete) pass a client-side rate limit;
a create whose answer was lost is retried and adopts our own object (``_adopt``). With
``warm_pool``, the pod is claimed from an agent-sandbox warm pool instead (``_agent_sandbox``).
Pause (``idle_action='pause'``) scales to zero keeping the working dir on a PersistentVolumeClaim
made at provision, the pod made again on resume (``_pause``). A snapshot is a VolumeSnapshot of
that claim where the cluster has a class for it, else an archive of the working dir in a claim of
its own (``_snapshot``).
"""

from __future__ import annotations

import contextlib
import functools
import os
from typing import Any

from kubernetes import client

from praisonai._errors import ConfigError, InstanceNotFoundError, UnsupportedFeatureError
from praisonai._types import Capability, InstanceInfo
from praisonai.compute._threads import run_blocking
from praisonai.compute.abilities import part
from praisonai.compute.base import ComputeProvider
from praisonai.compute.config import ComputeConfig
from praisonai.compute.lifecycle import LABEL_INSTANCE, LABEL_PROVIDER
from praisonai.compute.providers.kubernetes import (
    _adopt,
    _agent_sandbox,
    _api,
    _egress,
    _pause,
    _pod,
    _ports,
    _snapshot,
    _wait,
)
from praisonai.compute.providers.kubernetes._agent_sandbox import CLAIM_GROUP, CLAIMS, VERSION
from praisonai.compute.providers.kubernetes._api import WriteLimiter, connect, translated
from praisonai.compute.providers.kubernetes._channel import PodChannels
from praisonai.compute.providers.kubernetes._claim import WarmClaims
from praisonai.compute.providers.kubernetes._keeper import Keepers
from praisonai.compute.providers.kubernetes._options import KubernetesOptions
from praisonai.compute.providers.kubernetes._volumes import VolumeSnapshots
from praisonai.compute.separation import command_user, user_of
from praisonai.compute.watchdog import watchdog_command
from praisonai.runtime.channel import Channel


class KubernetesCompute(WarmClaims, PodChannels, ComputeProvider):
    """Instances are Pods in one namespace of a cluster; see the module docstring."""

    name = "kubernetes"
    options_model = KubernetesOptions
    own_volumes = True  # the working dir is an emptyDir or a claim of the pod's, never the host's
    requires = ("kubernetes",)
    extra = "kubernetes"
    capabilities = frozenset(
        {
            Capability.IMAGE,
            Capability.CPU_LIMIT,
            Capability.MEMORY_LIMIT,
            Capability.NETWORK_NONE,
            Capability.NETWORK_ALLOWLIST,
            Capability.ISOLATION,
            Capability.SELF_STOP,
        }
    )

    def __init__(self, **options: Any) -> None:
        """Keyword options as :class:`KubernetesOptions` names them; the image defaults to
        ``$PRAISONAI_KUBERNETES_IMAGE`` when set (as docker's to ``$PRAISONAI_DOCKER_IMAGE``)."""
        if "image" not in options and os.environ.get("PRAISONAI_KUBERNETES_IMAGE"):
            options["image"] = os.environ["PRAISONAI_KUBERNETES_IMAGE"]
        self._options = KubernetesOptions.parse(options)
        self._api: Any = None
        self._namespace = ""
        self._writes = WriteLimiter(self._options.writes_per_s, self._options.write_burst)
        self._workdirs: dict[str, str] = {}
        self._users: dict[str, str | None] = {}  # the commands' "UID:GID" (compute.separation)
        self._pods: dict[str, str] = {}  # instance id -> pod name (a claimed pod has the pool's)
        self._claims: dict[str, str] = {}  # instance id -> its SandboxClaim, for claimed pods
        self._warm_checked = False

    @property
    def options(self) -> KubernetesOptions:
        return self._options

    @part(Capability.PORTS)  # native: pods/portforward, as kubectl port-forward (_ports)
    def forwarder(self) -> _ports.PortForwarder:
        return _ports.PortForwarder(
            self._status, self._pod_of, lambda: (self.core, self.namespace), self._transport
        )

    @functools.cached_property  # the egress proxy pods of allowlists of host names (_egress)
    def egress(self) -> _egress.KubernetesEgress:
        connect, namespace = self._client, lambda: self.namespace
        return _egress.KubernetesEgress(connect, namespace, self._read_call, self._write_call, self._options)

    @property
    def core(self) -> Any:
        """The client's ``CoreV1Api`` (connected on first use)."""
        connected = self._client()  # first: no kubeconfig is said before CoreV1Api's 400 ms import
        return client.CoreV1Api(connected)

    @property
    def namespace(self) -> str:
        self._client()
        return self._namespace

    def _client(self) -> Any:
        if self._api is None:
            o = self._options
            self._api, found = connect(o.kubeconfig, o.context, o.in_cluster)
            self._namespace = o.namespace or found
        return self._api

    def unavailable_reason(self) -> str | None:
        try:
            with translated("list", "the namespace"):
                self.core.list_namespaced_pod(self.namespace, limit=1)
        except Exception as exc:  # any failure to reach the cluster is the reason, said as such
            return str(exc)
        return None

    def check_supported(self, cfg: ComputeConfig) -> None:
        """Also refuse an allowlist entry the egress proxy cannot match, and host names with a warm pool."""
        super().check_supported(cfg)
        if self._options.warm_pool:
            _agent_sandbox.check_config(cfg, self._options.warm_pool)
        _pause.check_config(cfg, self._options.warm_pool)
        if self._options.run_as_user is not None and command_user(cfg):
            raise ConfigError(
                f"run_as_user={self._options.run_as_user} runs the whole pod, its exec helper too, as "
                "one uid, so its commands cannot run apart from the helper; leave run_as_user unset "
                "(the pod runs as root, its commands as uid 1000), or ask for command_user='root'",
                op="provision",
            )
        self.egress.hosts(cfg)  # refuses what its proxy cannot match, and host names with a warm pool

    # ---- lifecycle -------------------------------------------------------------------------

    async def _write_call(self, op: str, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """One API write, after the rate limit, translated."""
        return await _api.write_call(self._writes, op, what, fn, *args, **kwargs)

    _read_call = staticmethod(_api.read_call)

    async def _create_or_adopt(self, what: str, instance_id: str, create: Any, read: Any) -> Any:
        """``create()`` (a rate-limited write), adopting our own object after a lost answer."""
        return await _adopt.create_or_adopt_calls(self._writes, what, instance_id, self.name, create, read)

    @part(Capability.PAUSE)
    def pauser(self) -> _pause.KubernetesPauser:
        volumes = _pause.Volumes(lambda: self.core, lambda: self.namespace, self._writes, self._options)
        return _pause.KubernetesPauser(
            volumes, self._channels, self._pods, self._status, self._run_pod, self.shutdown, self.egress.sweep
        )

    @part(Capability.SNAPSHOT)
    def snapshotter(self) -> _snapshot.KubernetesSnapshotter:
        """Snapshots are VolumeSnapshots of a claim, else archives of the working dir (``_snapshot``)."""
        volumes = self.pauser.volumes
        return _snapshot.KubernetesSnapshotter(
            VolumeSnapshots(volumes),
            Keepers(volumes, self._until_ready),
            self._make,
            self._shell,
            self._pod_of,
            self._workdir,
            self._spool,
        )

    async def _open_channel(self, instance_id: str) -> Channel:
        """The channel; a paused instance's first one resumes it (``KubernetesPauser.waking``)."""
        return await self.pauser.waking(instance_id, super()._open_channel, self.resume)

    async def _create(self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str]) -> InstanceInfo:
        return await self._make(instance_id, cfg, labels, None)

    async def _make(
        self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str], snapshot_id: str | None
    ) -> InstanceInfo:
        """The instance; with ``snapshot_id``, its working dir on a claim made from that
        VolumeSnapshot (``_volumes``), as a pausing instance's is."""
        if self._options.warm_pool:
            if snapshot_id is not None:
                raise UnsupportedFeatureError(
                    f"snapshot {snapshot_id} is a VolumeSnapshot, and a warm pool's pods cannot mount a "
                    "claim made from it (the pool made them); start it with a KubernetesCompute "
                    "without warm_pool",
                    op="provision",
                )
            return await self._claim(instance_id, cfg, labels, self._options.warm_pool)
        source = await self.snapshotter.volume_snapshots.source(snapshot_id) if snapshot_id else None
        # refused here, before anything is made
        storage = source.storage_class if source else await self.pauser.volumes.storage_for(cfg)
        command = watchdog_command(cfg.lifetime, self._spool(instance_id))
        claim = _pod.pod_name(instance_id) if storage else None
        body = _pod.manifest(instance_id, cfg, labels, command, self._options, claim)
        await self._ensure_policy(instance_id, cfg, body)  # before the pod: it must never run without it
        if storage:
            await self.pauser.volumes.create(instance_id, body, storage, source)
        return await self._run_pod(instance_id, body, cfg.working_dir)

    async def _run_pod(self, instance_id: str, body: dict[str, Any], working_dir: str) -> InstanceInfo:
        """Create pod ``body`` (adopting ours after a lost answer) and wait until it is ready."""
        name, ns = str(body["metadata"]["name"]), self.namespace
        await self._create_or_adopt(
            f"pod {name}",
            instance_id,
            functools.partial(self.core.create_namespaced_pod, ns, body),
            functools.partial(self.core.read_namespaced_pod, name, ns),
        )
        pod = await self._until_ready(name)
        await self.egress.after_pod(body)  # its egress proxy, ready before its first command
        self._pods[instance_id], self._workdirs[instance_id] = name, working_dir
        self._users[instance_id] = user_of(body["metadata"]["annotations"])
        return _pod.info_of(pod)

    async def _ensure_policy(
        self, instance_id: str, cfg: ComputeConfig, body: dict[str, Any] | None = None
    ) -> None:
        """The instance's NetworkPolicy, when its network needs one; with pod ``body``, both bound
        to the egress proxy of the allowlist's host names, when it has any (``_egress``)."""
        policy = _pod.network_policy(instance_id, cfg.network)
        if body is not None:
            self.egress.bind(body, policy, cfg)
        if policy is not None:
            name, ns = _pod.pod_name(instance_id), self.namespace
            net: Any = client.NetworkingV1Api(self._client())  # takes the manifest as a dict
            await self._create_or_adopt(
                f"network policy {name}",
                instance_id,
                functools.partial(net.create_namespaced_network_policy, ns, policy),
                functools.partial(net.read_namespaced_network_policy, name, ns),
            )

    async def _until_ready(self, pod: str) -> Any:
        o = self._options
        wait = functools.partial(
            _wait.until_ready, self.core, self.namespace, pod, o.scheduled_timeout_s, o.ready_timeout_s
        )
        return await run_blocking(wait)

    async def _destroy(self, instance_id: str) -> bool:
        """Delete the pod (a claimed one: its SandboxClaim, which owns it), its NetworkPolicy and
        its PersistentVolumeClaim (a pausing one's)."""
        found = await run_blocking(functools.partial(self._pod_of, instance_id, "shutdown"))
        claim = self._claims.pop(instance_id, None)
        if found is None and self._options.warm_pool:
            claim = _pod.pod_name(instance_id)  # a claim that never got its pod (an empty pool)
        name = found or _pod.pod_name(instance_id)
        self._workdirs.pop(instance_id, None)
        self._users.pop(instance_id, None)
        self._pods.pop(instance_id, None)
        self._channels.drop(instance_id)
        if claim is not None:
            custom: Any = client.CustomObjectsApi(self._client())
            where = (CLAIM_GROUP, VERSION, self.namespace, CLAIMS, claim)
            call: Any = functools.partial(custom.delete_namespaced_custom_object, *where)
            what = f"sandbox claim {claim}"
        else:
            options = client.V1DeleteOptions(grace_period_seconds=0)
            call = functools.partial(self.core.delete_namespaced_pod, name, self.namespace, body=options)
            what = f"pod {name}"
        try:
            gone = await self._write_call("shutdown", what, call)
            existed = True
        except InstanceNotFoundError:
            gone, existed = None, False
        net = client.NetworkingV1Api(self._client())
        # none there: it had none (network unrestricted), or it went already
        with contextlib.suppress(InstanceNotFoundError):
            delete = net.delete_namespaced_network_policy
            policy = _pod.pod_name(instance_id)
            await self._write_call("shutdown", f"network policy {policy}", delete, policy, self.namespace)
        await self.egress.released(gone, "shutdown")  # and its proxy, with the last instance behind it
        return await self.pauser.volumes.delete(instance_id) or existed  # after its pod: it mounts it

    def _pod_of(self, instance_id: str, op: str) -> str | None:
        """The instance's pod name (blocking): known, or found by its instance label — a claimed
        pod has its pool's name, not ours. ``None`` when there is none."""
        if instance_id in self._pods:
            return self._pods[instance_id]
        with translated(op, "the namespace"):
            found = self.core.list_namespaced_pod(
                self.namespace, label_selector=f"{LABEL_INSTANCE}={instance_id}"
            )
        for pod in found.items:
            self._pods[instance_id] = pod.metadata.name
            return str(pod.metadata.name)
        name = _pod.pod_name(instance_id)  # a claimed pod: found through its claim
        with translated(op, f"sandbox claim {name}"):
            exists, pod_name = _agent_sandbox.find_claim(self._client(), self.namespace, name)
        if exists:
            self._claims[instance_id] = name
        if pod_name is not None:
            self._pods[instance_id] = pod_name
        return pod_name

    async def _status(self, instance_id: str) -> InstanceInfo:
        name = await run_blocking(functools.partial(self._pod_of, instance_id, "status"))
        if name is None:  # paused (its claim says so), or not found
            return await self.pauser.volumes.paused_info(instance_id)
        pod = await self._read_call(
            "status", f"pod {name}", self.core.read_namespaced_pod, name, self.namespace
        )
        return _pod.info_of(pod)

    async def _list(self) -> list[InstanceInfo]:
        """Pods by our label, the pods of our SandboxClaims (which carry our identity in
        annotations), and paused instances by their PersistentVolumeClaims."""
        mine, ns = f"{LABEL_PROVIDER}={self.name}", self.namespace
        found = await self._read_call(
            "list", "the namespace", self.core.list_namespaced_pod, ns, label_selector=mine
        )
        infos = {i.instance_id: i for i in map(_pod.info_of, found.items)}
        claimed = functools.partial(_agent_sandbox.claimed_pods, self._client(), ns, mine)
        for name, extra in await self._read_call("list", "the sandbox claims", claimed):
            with contextlib.suppress(InstanceNotFoundError):  # its pod went meanwhile
                pod = await self._read_call("list", f"pod {name}", self.core.read_namespaced_pod, name, ns)
                pod.metadata.annotations = {**(pod.metadata.annotations or {}), **extra}
                infos.setdefault(extra.get(LABEL_INSTANCE, name), _pod.info_of(pod))
        for info in await self.pauser.volumes.paused_infos(mine):  # its live pod, if any, says more
            infos.setdefault(info.instance_id, info)
        return list(infos.values())


__all__ = ["KubernetesCompute", "KubernetesOptions"]
