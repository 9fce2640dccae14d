"""The Kubernetes provider's recovery and warm pools, through the real ``kubernetes`` client against
the loopback API-server fake: a create whose answer was lost, guarded session shells, and
agent-sandbox claims on a warm pool (the fake models the CRDs; it is not their controller)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip(
    "kubernetes", reason="the kubernetes client is not installed (pip install 'praisonai[kubernetes]')"
)

from praisonai import _portal
from praisonai._errors import ConfigError
from praisonai.compute import lifecycle
from praisonai.compute.config import ComputeConfig
from praisonai.compute.providers.kubernetes import KubernetesCompute
from praisonai.compute.testing.k8s_fake import K8sFake

IMAGE = "praisonai-sandbox:latest"


@pytest.fixture(scope="module")
def fake(docker_ok: None) -> Iterator[K8sFake]:
    with K8sFake() as server:
        yield server


@pytest.fixture(scope="module")
def kubeconfig(fake: K8sFake, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fake.write_kubeconfig(tmp_path_factory.mktemp("kube") / "config", namespace="warm")


@pytest.fixture(scope="module")
def provider(kubeconfig: Path) -> KubernetesCompute:
    return KubernetesCompute(kubeconfig=str(kubeconfig), image=IMAGE)


def _pods_of(fake: K8sFake, instance_id: str) -> list[str]:
    with fake.cond:
        found = [(name, pod["metadata"].get("labels") or {}) for (_, name), pod in fake.pods.items()]
    return [name for name, labels in found if labels.get("praisonai.instance") == instance_id]


# ---- a create whose answer was lost -----------------------------------------------------------


@pytest.mark.parametrize("lost", [0, 503], ids=["dropped", "5xx"])
def test_a_lost_create_answer_adopts_our_own_pod(
    provider: KubernetesCompute, fake: K8sFake, lost: int
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


def test_a_taken_name_that_is_not_ours_is_refused(provider: KubernetesCompute, fake: K8sFake) -> None:
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
        forwarder = "read -r by </tmp/.praisonai/busy/$$.by && [ -d /proc/$by ] && echo tied"
        assert _portal.call(lambda: session.run(forwarder)).stdout == "tied\n"
        assert _portal.call(lambda: session.run("cd /tmp && X=kept; true")).exit_code == 0
        assert _portal.call(lambda: session.run('echo "$PWD $X"')).stdout == "/tmp kept\n"
        _portal.call(session.close)
    finally:
        _portal.call(provider.shutdown, info.instance_id)
