"""``KubernetesCompute``'s options (``praisonai.compute.providers.kubernetes.KubernetesOptions``)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from praisonai.compute.egress import PROXY_IMAGE
from praisonai.compute.options import ProviderOptions, bounded


class KubernetesOptions(ProviderOptions):
    """``KubernetesCompute``'s options. The namespace is the config's (kubeconfig context, or the
    service account's in a cluster) unless given."""

    type: Literal["kubernetes"] = "kubernetes"
    kubeconfig: str | None = None
    context: str | None = None
    in_cluster: bool = False
    namespace: str | None = None
    image: str = "debian:bookworm-slim"  # needs sh, coreutils, tar
    cpu: Annotated[float, bounded("cpu")] = 1.0
    memory_mb: Annotated[int, bounded("memory_mb")] = 1024
    runtime_class: str | None = None  # e.g. "gvisor" or "kata", as the cluster names them
    # None: the pod runs as root (its helper and watchdog) and its commands as uid 1000
    # (compute.separation); a uid: the whole pod runs as that uid, its commands sharing the helper's
    # uid (command_user='root' only), for clusters whose policy refuses pods running as root
    run_as_user: Annotated[int | None, bounded("run_as_user")] = None
    read_only_root: bool = True
    scheduled_timeout_s: Annotated[float, bounded("scheduled_timeout_s")] = 300.0
    ready_timeout_s: Annotated[float, bounded("ready_timeout_s")] = 180.0
    writes_per_s: Annotated[float, bounded("writes_per_s")] = 5.0
    write_burst: Annotated[int, bounded("write_burst")] = 10
    egress_image: str = PROXY_IMAGE  # the proxy of allowlists of host names (images/build-proxy.sh)
    warm_pool: str | None = None  # an agent-sandbox SandboxWarmPool to claim instances from
    # idle_action='pause' keeps the working dir on a PersistentVolumeClaim of this class (else the
    # cluster's default StorageClass) and this size (a Kubernetes quantity)
    storage_class: str | None = None
    volume_size: Annotated[str, Field(pattern=r"^[0-9]+(Ki|Mi|Gi|Ti)?$")] = "1Gi"


__all__ = ["KubernetesOptions"]
