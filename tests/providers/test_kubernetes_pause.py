"""Pause on kubernetes (``_pause``) against the loopback API-server fake: the working dir of an
instance made with ``idle_action='pause'`` lives on a PersistentVolumeClaim (a docker volume in
the fake), the pod goes while it is paused and comes back under the same name; shutdown removes
both; a cluster without a default StorageClass refuses the instance before anything is made.
The conformance suite's pause checks run in test_conformance.py."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "kubernetes", reason="the kubernetes client is not installed (pip install 'praisonai[kubernetes]')"
)

from fakes import docker
from fakes.kubernetes import KubernetesFake
from fakes.kubernetes._pods import OWNER_LABEL
from served import IMAGE

from praisonai import _portal
from praisonai._errors import InstanceNotFoundError, UnsupportedFeatureError
from praisonai._types import InstanceStatus
from praisonai.compute import lifecycle
from praisonai.compute.config import ComputeConfig
from praisonai.compute.providers.kubernetes import KubernetesCompute

PROVIDER = "kubernetes"  # the fake and provider fixtures: tests/providers/conftest.py
PAUSING = {"idle_action": "pause", "auto_shutdown": False}


@pytest.fixture(scope="module")
def kubeconfig(fake: KubernetesFake, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fake.write_kubeconfig(tmp_path_factory.mktemp("kube") / "config", namespace="sbx")


@pytest.fixture
def paused_one(provider: KubernetesCompute) -> Iterator[str]:
    iid = _portal.call(provider.provision, PAUSING).instance_id
    try:
        yield iid
    finally:
        _portal.call(provider.shutdown, iid)


def _volumes(fake: KubernetesFake) -> list[str]:
    listed = docker.docker("volume", "ls", "-q", "--filter", f"label={OWNER_LABEL}={fake.fake_id}")
    return listed.stdout.decode().split()


def _sh(provider: KubernetesCompute, iid: str, command: str) -> str:
    result = _portal.call(lambda: provider.execute(iid, command))
    assert result.ok, result
    return str(result.stdout)


def test_the_working_dir_survives_on_its_claim(
    provider: KubernetesCompute, fake: KubernetesFake, paused_one: str
) -> None:
    iid, name = paused_one, paused_one.replace("_", "-")
    claim = fake.claims[("sbx", name)]
    assert claim["metadata"]["labels"]["praisonai.instance"] == iid, "gc and list find it by label"
    pod: dict[str, Any] = fake.pods[("sbx", name)]
    spec, box = pod["spec"], pod["spec"]["containers"][0]
    kept = {v["name"]: v for v in spec["volumes"]}["work"]
    assert kept["persistentVolumeClaim"] == {"claimName": name}
    assert {"name": "work", "mountPath": box["workingDir"]} in box["volumeMounts"]
    assert spec["securityContext"]["fsGroup"] == 1000 and not spec["automountServiceAccountToken"]
    assert box["securityContext"]["readOnlyRootFilesystem"], "the hardening stays as it was"
    _sh(provider, iid, "echo kept > kept.txt && echo gone > /tmp/gone.txt")

    assert _portal.call(provider.pause, iid).status is InstanceStatus.PAUSED
    assert ("sbx", name) not in fake.pods and ("sbx", name) in fake.claims, "the pod goes, the claim stays"
    assert _portal.call(provider.get_status, iid).status is InstanceStatus.PAUSED
    assert _portal.call(provider.pauser.paused_disk, iid) == 1 << 30, "ps shows the claim's capacity (1Gi)"
    listed = {i.instance_id: i.status for i in _portal.call(provider.list_instances)}
    assert listed[iid] is InstanceStatus.PAUSED, "list finds a paused instance by its claim"
    other = KubernetesCompute(kubeconfig=provider.options.kubeconfig, image=IMAGE)  # another process's view
    assert _portal.call(other.get_status, iid).status is InstanceStatus.PAUSED

    assert _portal.call(other.resume, iid).status is InstanceStatus.RUNNING
    assert fake.pods[("sbx", name)]["spec"]["volumes"] == spec["volumes"], "the same pod again"
    assert _sh(provider, iid, "cat kept.txt") == "kept\n"
    assert _sh(provider, iid, "ls /tmp/gone.txt 2>/dev/null; echo .") == ".\n", "only the working dir is kept"


def test_shutdown_removes_the_pod_and_the_claim(provider: KubernetesCompute, fake: KubernetesFake) -> None:
    iid = _portal.call(provider.provision, PAUSING).instance_id
    name = iid.replace("_", "-")
    volume = fake.claims[("sbx", name)]["_volume"]
    _portal.call(provider.pause, iid)
    assert volume in _volumes(fake)
    assert _portal.call(provider.shutdown, iid) is True, "a paused instance exists until removed"
    assert ("sbx", name) not in fake.pods and ("sbx", name) not in fake.claims
    assert volume not in _volumes(fake), "the claim's volume goes with it"
    with pytest.raises(InstanceNotFoundError):
        _portal.call(provider.get_status, iid)


def test_no_default_storage_class_is_refused_before_anything_is_made(
    kubeconfig: Path, fake: KubernetesFake
) -> None:
    p = KubernetesCompute(kubeconfig=str(kubeconfig), image=IMAGE)
    fake.default_storage_class = False
    before = len(fake.requests)
    try:
        with pytest.raises(UnsupportedFeatureError) as caught:
            _portal.call(p.provision, {**PAUSING, "network": "none"})
    finally:
        fake.default_storage_class = True
    said = str(caught.value)
    assert "no default StorageClass" in said and said.count(". ") == 0, said
    made = [path for method, path in fake.requests[before:] if method == "POST"]
    assert made == [], f"nothing created (no policy, claim or pod): {made}"


def test_a_named_storage_class_needs_no_default(kubeconfig: Path, fake: KubernetesFake) -> None:
    p = KubernetesCompute(kubeconfig=str(kubeconfig), image=IMAGE, storage_class="standard")
    fake.default_storage_class = False
    try:
        iid = _portal.call(p.provision, PAUSING).instance_id
    finally:
        fake.default_storage_class = True
    try:
        assert fake.claims[("sbx", iid.replace("_", "-"))]["spec"]["storageClassName"] == "standard"
    finally:
        _portal.call(p.shutdown, iid)


def test_an_instance_not_made_to_pause_refuses_and_has_no_claim(
    provider: KubernetesCompute, fake: KubernetesFake
) -> None:
    iid = _portal.call(provider.provision, {"auto_shutdown": False}).instance_id
    try:
        assert ("sbx", iid.replace("_", "-")) not in fake.claims
        with pytest.raises(UnsupportedFeatureError, match="idle_action='pause'"):
            _portal.call(provider.pause, iid)
    finally:
        _portal.call(provider.shutdown, iid)


def _made(provider: KubernetesCompute, config: dict[str, Any]) -> str:
    """An instance made without the lifecycle, whose reaper in this process would act first."""
    cfg = ComputeConfig.coerce(config)
    iid = lifecycle.new_instance_id("kubernetes")
    _portal.call(provider._create, iid, cfg, lifecycle.labels("kubernetes", iid, cfg))
    return iid


def test_the_idle_exit_is_a_pause_and_a_call_resumes_it(
    provider: KubernetesCompute, fake: KubernetesFake
) -> None:
    iid = _made(provider, {"idle_timeout_s": 2, "idle_action": "pause"})
    try:
        _sh(provider, iid, "echo kept > kept.txt")
        for _ in range(60):
            if _portal.call(provider.get_status, iid).status is InstanceStatus.PAUSED:
                break
            time.sleep(0.5)
        else:
            pytest.fail("the pod did not end when idle")
        assert ("sbx", iid.replace("_", "-")) in fake.claims, "the pod's end leaves its claim"
        assert _sh(provider, iid, "cat kept.txt") == "kept\n", "the next call resumes it"
    finally:
        assert _portal.call(provider.shutdown, iid) is True


def test_a_resume_past_the_ttl_removes_it(provider: KubernetesCompute, fake: KubernetesFake) -> None:
    iid = _made(provider, {"ttl_s": 3, "idle_action": "pause"})
    try:
        _portal.call(provider.pause, iid)
        time.sleep(3.2)
        with pytest.raises(InstanceNotFoundError, match="removed, not resumed"):
            _portal.call(provider.resume, iid)
        assert ("sbx", iid.replace("_", "-")) not in fake.claims
    finally:
        _portal.call(provider.shutdown, iid)
