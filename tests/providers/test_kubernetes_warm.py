"""The Kubernetes provider's recovery and warm pools, through the real ``kubernetes`` client against
the loopback API-server fake: a create whose answer was lost, guarded session shells, and
agent-sandbox claims on a warm pool (the fake models the CRDs; it is not their controller)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

pytest.importorskip(
    "kubernetes", reason="the kubernetes client is not installed (pip install 'praisonai[kubernetes]')"
)

from fakes.kubernetes import KubernetesFake
from kubernetes import client

from praisonai import _portal
from praisonai._errors import ConfigError, ProvisionError
from praisonai.compute import lifecycle
from praisonai.compute.config import ComputeConfig
from praisonai.compute.providers.kubernetes import KubernetesCompute
from praisonai.compute.separation import LABEL_COMMAND_USER, root_capabilities

IMAGE = "praisonai-sandbox:latest"


@pytest.fixture(scope="module")
def fake(docker_ok: None) -> Iterator[KubernetesFake]:
    with KubernetesFake() as server:
        yield server


@pytest.fixture(scope="module")
def kubeconfig(fake: KubernetesFake, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fake.write_kubeconfig(tmp_path_factory.mktemp("kube") / "config", namespace="warm")


@pytest.fixture(scope="module")
def provider(kubeconfig: Path) -> KubernetesCompute:
    return KubernetesCompute(kubeconfig=str(kubeconfig), image=IMAGE)


def _pods_of(fake: KubernetesFake, instance_id: str) -> list[str]:
    with fake.cond:
        found = [(name, pod["metadata"].get("labels") or {}) for (_, name), pod in fake.pods.items()]
    return [name for name, labels in found if labels.get("praisonai.instance") == instance_id]


# ---- a create whose answer was lost -----------------------------------------------------------


@pytest.mark.parametrize("lost", [0, 503], ids=["dropped", "5xx"])
def test_a_lost_create_answer_adopts_our_own_pod(
    provider: KubernetesCompute, fake: KubernetesFake, lost: int
) -> None:
    """The fake creates the network policy and the pod, then loses each answer: the retry meets
    409 AlreadyExists, reads the object back, finds it ours and goes on with it."""
    fake.lose_next_answer(lost)  # the network policy's create
    fake.lose_next_answer(lost)  # the pod's
    info = _portal.call(provider.provision, {"network": "none", "auto_shutdown": False})
    try:
        assert len(_pods_of(fake, info.instance_id)) == 1
        r = _portal.call(lambda: provider.execute(info.instance_id, "echo adopted"))
        assert (r.exit_code, r.stdout) == (0, "adopted\n"), r
    finally:
        _portal.call(provider.shutdown, info.instance_id)
    assert not _pods_of(fake, info.instance_id) and not fake.lost_answers


def test_a_taken_name_that_is_not_ours_is_refused(provider: KubernetesCompute, fake: KubernetesFake) -> None:
    iid = "kubernetes_0123456789ab"
    box = {"name": "sandbox", "image": "praisonai-no-such-image:0"}
    meta = {"name": iid.replace("_", "-"), "labels": {"app": "x"}}
    squatter = {"metadata": meta, "spec": {"containers": [box]}}
    assert fake.create_pod("warm", squatter)[0] == 201
    try:
        cfg = ComputeConfig.coerce({})
        with pytest.raises(ConfigError, match="already exists in the cluster and is not instance"):
            _portal.call(provider._create, iid, cfg, lifecycle.labels("kubernetes", iid, cfg))
    finally:
        fake.delete_pod("warm", iid.replace("_", "-"))


# ---- session shells, guarded as docker's ------------------------------------------------------


def test_a_session_shell_is_tied_to_its_client(provider: KubernetesCompute) -> None:
    """The pod runs the docker watchdog and spool, so a session's shell reads its input through a
    forwarder that ends with the client's connection: its busy command counts as activity only
    while the client is there (see ``guarded_session``)."""
    info = _portal.call(provider.provision, {"auto_shutdown": False})
    try:
        session = _portal.call(provider.open_session, info.instance_id)
        # busy/<the session's pid>.by: its frame's (root's, as on docker: compute.separation.session),
        # the shell's process group (/proc/$$/stat's 5th field)
        group = "read -r s </proc/$$/stat; set -- ${s##*) }; g=$3"
        forwarder = f"{group}; read -r by </tmp/.praisonai/busy/$g.by && [ -d /proc/$by ] && echo tied"
        assert _portal.call(lambda: session.run(forwarder)).stdout == "tied\n"
        assert _portal.call(lambda: session.run("cd /tmp && X=kept; true")).exit_code == 0
        assert _portal.call(lambda: session.run('echo "$PWD $X"')).stdout == "/tmp kept\n"
        _portal.call(session.close)
    finally:
        _portal.call(provider.shutdown, info.instance_id)


# ---- agent-sandbox warm pools (the fake models the CRDs; it is not their controller) ----------

EXT = ("extensions.agents.x-k8s.io", "v1beta1", "warm")


@pytest.fixture(scope="module")
def warm_fake(docker_ok: None) -> Iterator[KubernetesFake]:
    with KubernetesFake(agent_sandbox=True) as server:
        yield server


@pytest.fixture(scope="module")
def warm_kubeconfig(warm_fake: KubernetesFake, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = warm_fake.write_kubeconfig(tmp_path_factory.mktemp("kube") / "config", namespace="warm")
    custom = client.CustomObjectsApi(KubernetesCompute(kubeconfig=str(path)).core.api_client)
    # as our own pods: root, with root's few capabilities, for commands to run apart as uid 1000
    caps = {"drop": ["ALL"], "add": root_capabilities(ComputeConfig())}
    security = {"allowPrivilegeEscalation": False, "capabilities": caps}
    box = {"name": "sandbox", "image": IMAGE, "command": ["sleep", "infinity"], "securityContext": security}
    template = {"podTemplate": {"metadata": {"labels": {"app": "pool"}}, "spec": {"containers": [box]}}}
    custom.create_namespaced_custom_object(
        *EXT, "sandboxtemplates", _object("SandboxTemplate", "tpl", template)
    )
    for name, replicas in (("pool", 2), ("empty", 0)):
        spec = {"replicas": replicas, "sandboxTemplateRef": {"name": "tpl"}}
        custom.create_namespaced_custom_object(
            *EXT, "sandboxwarmpools", _object("SandboxWarmPool", name, spec)
        )
    return path


def _object(kind: str, name: str, spec: dict[str, object]) -> dict[str, object]:
    return {"apiVersion": "/".join(EXT[:2]), "kind": kind, "metadata": {"name": name}, "spec": spec}


def _until(check: Callable[[], bool], what: str) -> None:
    for _ in range(600):
        if check():
            return
        time.sleep(0.1)
    pytest.fail(f"never happened: {what}")


def _pool(fake: KubernetesFake, name: str) -> dict[str, int]:
    with fake.cond:
        return dict(fake.custom[("sandboxwarmpools", "warm", name)]["status"])


def _claims(fake: KubernetesFake) -> list[str]:
    with fake.cond:
        return [name for (plural, _, name) in fake.custom if plural == "sandboxclaims"]


def test_a_claim_is_served_from_the_pool_which_refills(
    warm_fake: KubernetesFake, warm_kubeconfig: Path
) -> None:
    _until(lambda: _pool(warm_fake, "pool").get("readyReplicas") == 2, "the pool is ready")
    p = KubernetesCompute(kubeconfig=str(warm_kubeconfig), warm_pool="pool")
    info = _portal.call(p.provision, {"env": {"PZ_SECRET": "s3"}, "auto_shutdown": False})
    other = KubernetesCompute(kubeconfig=str(warm_kubeconfig))  # as another process would
    try:
        pod = info.metadata["pod"]
        assert pod.startswith("pool-") and _claims(warm_fake) == [info.instance_id.replace("_", "-")]
        r = _portal.call(lambda: p.execute(info.instance_id, 'echo "$PZ_SECRET"; pwd; id -u'))
        assert (r.exit_code, r.stdout) == (0, "s3\n/workspace\n1000\n"), r  # env bound after the claim
        _until(
            lambda: _pool(warm_fake, "pool") == {**_pool(warm_fake, "pool"), "readyReplicas": 2}, "a refill"
        )
        assert info.instance_id in [i.instance_id for i in _portal.call(other.list_instances)]
        assert _portal.call(other.get_status, info.instance_id).metadata["pod"] == pod
        with warm_fake.cond:  # as a controller that has not merged the claim's annotations yet
            warm_fake.pods[("warm", pod)]["metadata"]["annotations"].pop(LABEL_COMMAND_USER)
        there = _portal.call(lambda: other.execute(info.instance_id, "echo there; id -u"))
        assert there.stdout == "there\n1000\n", there  # the command user, read off the claim
    finally:
        assert _portal.call(other.shutdown, info.instance_id) is True  # deletes the claim, found by label
    assert not _claims(warm_fake) and ("warm", pod) not in warm_fake.pods


def test_a_lost_claim_answer_adopts_our_own_claim(warm_fake: KubernetesFake, warm_kubeconfig: Path) -> None:
    _until(lambda: _pool(warm_fake, "pool").get("readyReplicas") == 2, "the pool is ready")
    p = KubernetesCompute(kubeconfig=str(warm_kubeconfig), warm_pool="pool")
    warm_fake.lose_next_answer(0)  # the claim is made, then the connection drops
    info = _portal.call(p.provision, {"auto_shutdown": False})
    try:
        assert _claims(warm_fake) == [info.instance_id.replace("_", "-")] and not warm_fake.lost_answers
        assert _portal.call(lambda: p.execute(info.instance_id, "echo one")).stdout == "one\n"
    finally:
        assert _portal.call(p.shutdown, info.instance_id) is True
    assert not _claims(warm_fake)


def test_an_empty_pool_times_out_in_one_sentence(warm_fake: KubernetesFake, warm_kubeconfig: Path) -> None:
    p = KubernetesCompute(kubeconfig=str(warm_kubeconfig), warm_pool="empty", ready_timeout_s=1.5)
    with pytest.raises(
        ProvisionError, match=r"warm pool 'empty' gave claim .* no ready sandbox within 1.5 s"
    ):
        _portal.call(p.provision, {"auto_shutdown": False})
    assert not _claims(warm_fake)  # the failed provision deleted its claim


def test_what_the_pools_template_decides_is_refused(warm_kubeconfig: Path) -> None:
    p = KubernetesCompute(kubeconfig=str(warm_kubeconfig), warm_pool="pool")
    with pytest.raises(ConfigError, match=r"get image, network from the pool's SandboxTemplate"):
        _portal.call(p.provision, {"image": IMAGE, "network": "none"})


def test_a_warm_pool_without_the_crds_is_one_sentence(kubeconfig: Path) -> None:
    p = KubernetesCompute(kubeconfig=str(kubeconfig), warm_pool="pool")
    with pytest.raises(ConfigError, match="needs the agent-sandbox CRDs"):
        _portal.call(p.provision, {"auto_shutdown": False})


def test_nothing_is_left_but_the_pool(warm_fake: KubernetesFake) -> None:
    """Every pod left is an unclaimed member of a pool; closing the fake removes their containers."""
    assert not _claims(warm_fake)
    with warm_fake.cond:
        labels = [pod["metadata"].get("labels") or {} for pod in warm_fake.pods.values()]
    assert labels and all(found.get("agents.x-k8s.io/warm-pool-sandbox") == "pool" for found in labels), (
        labels
    )
