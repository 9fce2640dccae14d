"""The Kubernetes provider through the real ``kubernetes`` client, against the loopback API-server
fake (``fakes.kubernetes``) whose pods are docker containers — a contract test of
our client code, not of a cluster (its conformance suite: in test_conformance.py); and, when
PRAISONAI_TEST_KUBECONFIG is set, the suite against that cluster."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip(
    "kubernetes", reason="the kubernetes client is not installed (pip install 'praisonai[kubernetes]')"
)

from fakes.kubernetes import KubernetesFake
from served import IMAGE, TARGETS, run_check

from praisonai import _portal
from praisonai._errors import ConfigError, ImageNotFoundError, InstanceNotFoundError, ProviderUnavailableError
from praisonai.compute import lifecycle, registry
from praisonai.compute.config import ComputeConfig
from praisonai.compute.providers.kubernetes import KubernetesCompute
from praisonai.compute.providers.kubernetes._transport import PodExecTransport, open_exec
from praisonai.compute.separation import LABEL_COMMAND_USER, root_capabilities
from praisonai.compute.testing import CHECKS, Context

PROVIDER = "kubernetes"  # the fake, provider and ctx fixtures: tests/providers/conftest.py
LIVE_KUBECONFIG = os.environ.get("PRAISONAI_TEST_KUBECONFIG")


@pytest.fixture(scope="module")
def kubeconfig(fake: KubernetesFake, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fake.write_kubeconfig(tmp_path_factory.mktemp("kube") / "config", namespace="sbx")


def _context(provider: KubernetesCompute, kubeconfig: str, image: str) -> Iterator[Context]:
    registry.register("kubernetes", KubernetesCompute)
    info = _portal.call(provider.provision, {"auto_shutdown": False})
    expr = f"KubernetesCompute(kubeconfig={kubeconfig!r}, image={image!r})"
    try:
        yield Context(
            provider,
            info.instance_id,
            provider_expr=f"__import__('praisonai.compute.providers.kubernetes', fromlist=['x']).{expr}",
        )
    finally:
        _portal.call(provider.shutdown, info.instance_id)


# ---- the pod ---------------------------------------------------------------------------------


def test_the_pod_is_hardened_and_carries_our_identity(ctx: Context, fake: KubernetesFake) -> None:
    pod = next(p for (ns, _), p in fake.pods.items() if ns == "sbx" and
               p["metadata"]["labels"].get("praisonai.instance") == ctx.instance_id)  # fmt: skip
    spec, box = pod["spec"], pod["spec"]["containers"][0]
    assert pod["metadata"]["labels"]["praisonai.provider"] == "kubernetes"
    assert "@" in pod["metadata"]["annotations"]["praisonai.owner"]  # not a valid label value
    assert spec["automountServiceAccountToken"] is False and spec["restartPolicy"] == "Never"
    # its helper as root with docker's few capabilities for root; its commands as uid 1000, apart
    assert spec["securityContext"] == {"runAsUser": 0, "runAsGroup": 0, "fsGroup": 1000}
    assert box["securityContext"]["capabilities"] == {
        "drop": ["ALL"],
        "add": root_capabilities(ComputeConfig()),
    }
    assert pod["metadata"]["annotations"][LABEL_COMMAND_USER] == "1000:1000"
    assert box["securityContext"]["readOnlyRootFilesystem"] is True
    assert box["securityContext"]["allowPrivilegeEscalation"] is False
    assert box["resources"]["limits"] == {"cpu": "1000m", "memory": "1024Mi"}
    r = _portal.call(ctx.sh, "id -u; touch /etc/x 2>/dev/null || echo read-only")
    assert r.stdout == "1000\nread-only\n", r
    root = _portal.call(lambda: ctx.provider.execute(ctx.instance_id, "id -u", privileged=True))
    assert root.stdout == "0\n", root


def test_what_setup_made_as_root_is_the_commands(kubeconfig: Path) -> None:
    """Setup runs as root; what it leaves in the working dir is then uid 1000's, as on docker."""
    provider = KubernetesCompute(kubeconfig=str(kubeconfig), image=IMAGE)
    cfg = {"auto_shutdown": False, "setup": ["mkdir built && echo made > built/it.txt"]}
    iid = _portal.call(provider.provision, cfg).instance_id
    try:
        changed = "echo more >> built/it.txt && stat -c %u:%g built built/it.txt"
        r = _portal.call(provider.execute, iid, changed)
        assert (r.exit_code, r.stdout.split()) == (0, ["1000:1000"] * 2), r
    finally:
        _portal.call(provider.shutdown, iid)


def test_a_pod_of_one_uid_is_refused_unless_its_commands_may_share_it(kubeconfig: Path) -> None:
    """``run_as_user`` runs the whole pod as that uid (for clusters that refuse root pods): its
    commands could not run apart from the helper, so only ``command_user='root'`` may ask for it."""
    provider = KubernetesCompute(kubeconfig=str(kubeconfig), image=IMAGE, run_as_user=1000)
    with pytest.raises(ConfigError, match=r"run_as_user=1000 runs the whole pod.*command_user='root'"):
        _portal.call(provider.provision, {"auto_shutdown": False})
    iid = _portal.call(provider.provision, {"auto_shutdown": False, "command_user": "root"}).instance_id
    try:
        r = _portal.call(provider.execute, iid, "id -u; grep CapEff /proc/self/status")
        assert r.stdout.split() == ["1000", "CapEff:", "0000000000000000"], r
    finally:
        _portal.call(provider.shutdown, iid)


def test_stdout_and_stderr_stay_apart_over_one_websocket(ctx: Context, fake: KubernetesFake) -> None:
    r = _portal.call(ctx.sh, "printf out; printf err >&2; exit 7")
    assert (r.stdout, r.stderr, r.exit_code) == ("out", "err", 7), r


def test_the_client_keeps_no_copy_of_the_helpers_output(ctx: Context) -> None:
    """stream() makes the client copy all output for read_all (capture_all): a helper that lives
    for hours would grow it forever; the transport turns it off. (Reads the client's private
    buffer: there is no public size.)"""
    p = ctx.provider
    assert isinstance(p, KubernetesCompute)
    _portal.call(ctx.sh, "head -c 3000000 /dev/zero")
    channel = p._channels.peek(ctx.instance_id)
    assert channel is not None and isinstance(channel.transport, PodExecTransport)
    assert len(channel.transport._ws._all.getvalue()) < 1 << 16


def test_listing_by_label_from_another_provider_object(ctx: Context, kubeconfig: Path) -> None:
    other = KubernetesCompute(kubeconfig=str(kubeconfig), image=IMAGE)
    assert ctx.instance_id in [i.instance_id for i in _portal.call(other.list_instances)]


def test_a_dropped_stream_is_reopened(ctx: Context) -> None:
    p, iid = ctx.provider, ctx.instance_id
    assert isinstance(p, KubernetesCompute)
    _portal.call(ctx.sh, "true")
    channel = p._channels.peek(iid)
    assert channel is not None
    channel.transport.close()  # as a proxy dropping the WebSocket would
    # The reader notices the drop (a command sent into the dead socket before it does may have
    # run, and is reported so: the at-most-once promise, not this test's subject).
    deadline = time.monotonic() + 10
    while channel.is_open and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not channel.is_open
    assert _portal.call(ctx.sh, "echo again").stdout == "again\n"


def test_network_none_is_a_network_policy(provider: KubernetesCompute, fake: KubernetesFake) -> None:
    info = _portal.call(provider.provision, {"network": "none", "auto_shutdown": False})
    try:
        name = info.metadata["pod"]
        policy = fake.policies[("sbx", name)]["spec"]
        assert policy["policyTypes"] == ["Ingress", "Egress"] and "egress" not in policy
        r = _portal.call(lambda: provider.execute(info.instance_id, "cat /sys/class/net/*/operstate | wc -l"))
        assert r.stdout.strip() == "1", r  # only lo: the fake enforces the policy as a CNI would
    finally:
        _portal.call(provider.shutdown, info.instance_id)
    assert ("sbx", name) not in fake.policies


def test_host_names_in_an_allowlist_are_refused_with_a_warm_pool(kubeconfig: Path) -> None:
    p = KubernetesCompute(kubeconfig=str(kubeconfig), image=IMAGE, warm_pool="pool")
    with pytest.raises(ConfigError, match="warm pool"):
        _portal.call(p.provision, {"network": {"allow": ["pypi.org"]}})


def test_a_pending_pod_times_out_as_unscheduled(kubeconfig: Path, fake: KubernetesFake) -> None:
    p = KubernetesCompute(kubeconfig=str(kubeconfig), image=IMAGE, scheduled_timeout_s=1.5)
    fake.unschedulable = True
    try:
        with pytest.raises(ProviderUnavailableError, match=r"not scheduled.*Unschedulable"):
            _portal.call(p.provision, {"auto_shutdown": False})
    finally:
        fake.unschedulable = False
    assert not [i for i in _portal.call(p.list_instances) if i.metadata["phase"] == "Pending"], "leaked"


def test_a_missing_image_fails_at_once(kubeconfig: Path) -> None:
    p = KubernetesCompute(kubeconfig=str(kubeconfig), image="praisonai-no-such-image:0")
    with pytest.raises(ImageNotFoundError, match="ErrImageNeverPull"):
        _portal.call(p.provision, {"auto_shutdown": False})


def test_unknown_instances_are_not_found(provider: KubernetesCompute) -> None:
    with pytest.raises(InstanceNotFoundError):
        _portal.call(provider.get_status, "kubernetes_000000000000")
    assert _portal.call(provider.shutdown, "kubernetes_000000000000") is False


def test_an_unreachable_cluster_and_a_missing_config_are_one_sentence(tmp_path: Path) -> None:
    closed = tmp_path / "kc"  # nothing listens on port 1 of the loopback
    closed.write_text(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:1\n"
        "users:\n- name: u\n  user: {}\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n"
        "current-context: x\n"
    )
    reason = KubernetesCompute(kubeconfig=str(closed)).unavailable_reason()
    assert reason is not None and "unreachable" in reason, reason
    with pytest.raises(ConfigError, match="no usable Kubernetes configuration"):
        KubernetesCompute(kubeconfig=str(tmp_path / "missing")).namespace  # noqa: B018


def test_writes_are_rate_limited(kubeconfig: Path, fake: KubernetesFake) -> None:
    p = KubernetesCompute(kubeconfig=str(kubeconfig), image=IMAGE, writes_per_s=4, write_burst=1)
    before = len(fake.write_times)
    for i in range(3):
        _portal.call(p.shutdown, f"kubernetes_00000000000{i}")  # two writes each (pod, policy)
    times = fake.write_times[before:]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    # a lower bound the limiter guarantees (a slow machine only widens the gaps): 4/s, burst 1
    assert len(gaps) == 5 and min(gaps) > 0.15, gaps


def test_the_idle_watchdog_ends_the_pod(provider: KubernetesCompute, fake: KubernetesFake) -> None:
    """Made without the lifecycle (whose reaper in this process would delete it first): only the
    in-pod watchdog can end it; the pod is then ``Succeeded`` until someone deletes it."""
    cfg = ComputeConfig.coerce({"idle_timeout_s": 2})
    iid = lifecycle.new_instance_id("kubernetes")
    _portal.call(provider._create, iid, cfg, lifecycle.labels("kubernetes", iid, cfg))
    try:
        for _ in range(60):
            if _portal.call(provider.get_status, iid).metadata["phase"] == "Succeeded":
                break
            time.sleep(0.5)
        else:
            pytest.fail("the pod did not end when idle")
    finally:
        assert _portal.call(provider.shutdown, iid) is True


# ---- the exec protocol itself, through the real client ---------------------------------------


@pytest.mark.parametrize("protocol", ["v5.channel.k8s.io", "v4.channel.k8s.io"])
def test_exec_subprotocols(docker_ok: None, tmp_path: Path, protocol: str) -> None:
    with KubernetesFake(protocols=(protocol,)) as server:
        p = KubernetesCompute(kubeconfig=str(server.write_kubeconfig(tmp_path / "kc")), image=IMAGE)
        info = _portal.call(p.provision, {"auto_shutdown": False})
        try:
            r = _portal.call(lambda: p.execute(info.instance_id, "echo $((6*7)); exit 5"))
            assert (r.stdout, r.exit_code) == ("42\n", 5), r
            ws = open_exec(p.core, p.namespace, info.metadata["pod"], ["sh", "-c", "exit 9"])
            assert ws.subprotocol == protocol
            transport = PodExecTransport(ws)
            transport.start(lambda b: None, lambda b: None, lambda: None)
            for _ in range(100):
                if transport.exit_code() is not None:
                    break
                time.sleep(0.05)
            assert transport.exit_code() == 9  # from the error channel's Status
            transport.close()
        finally:
            _portal.call(p.shutdown, info.instance_id)


def test_kubectl_talks_to_the_fake(fake: KubernetesFake, kubeconfig: Path, ctx: Context) -> None:
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed")
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    pod = ctx.instance_id.replace("_", "-")
    got = subprocess.run(["kubectl", "get", "pods", "-l", "praisonai.provider=kubernetes"], env=env,
                         capture_output=True, timeout=60, check=False)  # fmt: skip
    assert pod in got.stdout.decode(), got
    done = subprocess.run(["kubectl", "exec", "-i", pod, "--", "sh"], input=b"echo via-kubectl; exit 3\n",
                          env=env, capture_output=True, timeout=60, check=False)  # fmt: skip
    assert (done.returncode, done.stdout) == (3, b"via-kubectl\n"), done


# ---- a real cluster --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def live_ctx() -> Iterator[Context]:
    if not LIVE_KUBECONFIG:
        pytest.skip("set PRAISONAI_TEST_KUBECONFIG to run the conformance suite against a real cluster")
    image = os.environ.get("PRAISONAI_TEST_K8S_IMAGE", "debian:bookworm-slim")
    yield from _context(KubernetesCompute(kubeconfig=LIVE_KUBECONFIG, image=image), LIVE_KUBECONFIG, image)


@pytest.mark.parametrize("check", list(CHECKS))
def test_live_conformance(live_ctx: Context, check: str) -> None:
    run_check(TARGETS[PROVIDER], live_ctx, check)
