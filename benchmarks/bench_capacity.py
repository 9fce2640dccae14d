"""How many instances one host, a pool of hosts and a Kubernetes cluster hold: a model built from
measured per-instance costs, checked against bench_scale.py at the sizes this machine runs.

Measured here, in this run:

* engine API calls per operation, ours next to raw docker-py (provision, first exec, a later exec,
  shutdown), counted by a proxy in front of the engine's socket (``_api_counter``);
* Kubernetes API calls per operation, ours next to the raw ``kubernetes`` client (create the pod,
  wait until it runs, one exec, delete), counted at the API-server wire fake (``fakes.kubernetes``,
  driven by the real client, pods run as real containers). Counts only: no latency through a fake.

Read from ``benchmarks/results/bench_scale.json`` (run ``bench_scale.py`` first, quietly): the
per-instance costs at each N (idle host memory, create rate to first exec, teardown rate).

The model (printed with every assumption it makes): an instance's idle host memory M and a
host's create rate R are measured at the smallest N >= 10; then one host holds its usable memory
/ M instances (and fewer on a network, where one Linux bridge takes 1023 ports), filled at R per
second; P hosts placed client-side (a ``DockerPool``) hold P times that at P x R (no shared
control plane); a cluster of K nodes holds min(max pods per node, memory / M) x K, created at
min(K x R, the scheduler's API budget / writes per pod). The check predicts, from the smallest N,
the time to make and the memory of every larger N bench_scale measured, and prints predicted /
measured.

    python3 benchmarks/bench_capacity.py [--scale benchmarks/results/bench_scale.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _api_counter import ApiCounter
from _common import RESULTS_DIR, save

from praisonai import _portal

IMAGE = "praisonai-sandbox:latest"
LABELS = {"praisonai.bench": "1", "praisonai.bench.run": uuid.uuid4().hex[:12]}
# Defaults of the systems the model reaches past this machine (each a documented default):
LINUX_BRIDGE_PORTS = 1023  # BR_MAX_PORTS (1024) less the bridge's own: veths per docker network
KUBELET_MAX_PODS = 110  # kubelet --max-pods
SCHEDULER_QPS = 50.0  # kube-scheduler clientConnection.qps: one binding write per pod
CONTROL_PLANE_WRITES = 3  # per pod besides the client's: the binding, kubelet's status updates
HOST_RESERVE = 0.2  # of a host's memory kept for the engine, the kernel and the instances' work
#: Kubernetes path segments followed by an object's name (a route, not one object's URL)
NAMED = {"namespaces", "pods", "networkpolicies", "sandboxes", "sandboxclaims"}
OPS = ("provision", "first exec", "later exec", "shutdown")


def docker_calls() -> dict[str, dict[str, dict[str, int]]]:
    """Engine API calls per operation, ours and raw docker-py, through one counting proxy."""
    import docker

    from praisonai.compute.providers.docker import DockerCompute

    with tempfile.TemporaryDirectory() as folder, ApiCounter(Path(folder)) as counter:
        ours: dict[str, dict[str, int]] = {}
        provider = DockerCompute(base_url=counter.url)
        counter.take()  # whatever building the provider asked (version negotiation) is not an op
        info = _portal.call(provider.provision, {"network": "none"})
        try:
            ours["provision"] = counter.take()
            for op in OPS[1:3]:
                _portal.call(provider.execute, info.instance_id, "true")
                ours[op] = counter.take()
        finally:
            _portal.call(provider.shutdown, info.instance_id)
        ours["shutdown"] = counter.take()
        raw: dict[str, dict[str, int]] = {}
        client = docker.DockerClient(base_url=counter.url)
        counter.take()
        box = client.containers.run(IMAGE, ["sleep", "300"], detach=True, labels=LABELS, network_mode="none")
        try:
            raw["provision"] = counter.take()
            for op in OPS[1:3]:
                box.exec_run(["true"])
                raw[op] = counter.take()
        finally:
            box.remove(force=True)
        raw["shutdown"] = counter.take()
        client.close()
    return {"ours": ours, "raw docker-py": raw}


def kubernetes_calls() -> dict[str, dict[str, dict[str, int]]]:
    """API-server calls per operation, ours and the raw client, at the wire fake."""
    from fakes.kubernetes import KubernetesFake
    from kubernetes import client, config, stream

    from praisonai.compute.providers.kubernetes import KubernetesCompute

    def take(fake: KubernetesFake) -> dict[str, int]:
        calls: dict[str, int] = {}
        for method, path in fake.requests:
            parts = path.split("?", 1)[0].split("/")
            named = ("{name}" if i and parts[i - 1] in NAMED else p for i, p in enumerate(parts))
            key = f"{method} {'/'.join(named)}"
            calls[key] = calls.get(key, 0) + 1
        fake.requests.clear()
        return calls

    with tempfile.TemporaryDirectory() as folder, KubernetesFake() as fake:
        kubeconfig = str(fake.write_kubeconfig(Path(folder) / "config", namespace="sbx"))
        provider = KubernetesCompute(kubeconfig=kubeconfig, image=IMAGE)
        ours: dict[str, dict[str, int]] = {}
        info = _portal.call(provider.provision, {"auto_shutdown": False})
        try:
            ours["provision"] = take(fake)
            for op in OPS[1:3]:
                _portal.call(provider.execute, info.instance_id, "true")
                ours[op] = take(fake)
        finally:
            _portal.call(provider.shutdown, info.instance_id)
        ours["shutdown"] = take(fake)
        raw: dict[str, dict[str, int]] = {}
        api = client.CoreV1Api(config.new_client_from_config(kubeconfig))
        name = f"raw-{uuid.uuid4().hex[:8]}"
        pod = {
            "metadata": {"name": name},
            "spec": {"containers": [{"name": "box", "image": IMAGE, "command": ["sleep", "300"]}]},
        }
        api.create_namespaced_pod("sbx", pod)
        try:
            while api.read_namespaced_pod(name, "sbx").status.phase != "Running":
                time.sleep(0.05)
            raw["provision"] = take(fake)
            for op in OPS[1:3]:
                stream.stream(
                    api.connect_get_namespaced_pod_exec,
                    name,
                    "sbx",
                    command=["true"],
                    stdout=True,
                    stderr=True,
                )
                raw[op] = take(fake)
        finally:
            api.delete_namespaced_pod(name, "sbx")
        raw["shutdown"] = take(fake)
    return {"ours": ours, "raw kubernetes client": raw}


def writes(calls: dict[str, int]) -> int:
    return sum(
        n for route, n in calls.items() if route.split(" ", 1)[0] in {"POST", "PUT", "PATCH", "DELETE"}
    )


def print_calls(title: str, sides: dict[str, dict[str, dict[str, int]]]) -> None:
    print(f"\n{title}: calls per operation (writes in brackets)")
    print(f"  {'':24}" + "".join(f"{op:>14}" for op in OPS))
    for side, ops in sides.items():
        cells = "".join(f"{sum(ops[op].values()):>9} [{writes(ops[op])}]".rjust(14) for op in OPS)
        print(f"  {side:24}{cells}")
    for side, ops in sides.items():
        for op in OPS:
            print(f"    {side} {op}: " + ", ".join(f"{r} x{n}" for r, n in sorted(ops[op].items())))


def host_memory_mib() -> float:
    fields = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    return int(fields["MemTotal"].split()[0]) / 1024


def reference(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The row the model is built from: the smallest N >= 10 (N=1 measures no concurrency)."""
    return next((r for r in rows if r["n"] >= 10), rows[-1])


def model(scale: dict[str, Any], k8s_writes: int) -> dict[str, Any]:
    """Capacity and fill time of one host, a pool and a cluster, per configuration measured."""
    total = host_memory_mib()
    usable = total * (1 - HOST_RESERVE)
    print(
        f"\nmodel (this host: {total / 1024:.1f} GiB, {os.cpu_count()} cores; {HOST_RESERVE:.0%} kept back)"
    )
    out: dict[str, Any] = {}
    pod_writes = k8s_writes + CONTROL_PLANE_WRITES
    for config, rows in scale["configs"].items():
        if not isinstance(rows, list) or not rows:
            continue
        ref = reference(rows)
        per_mib, rate = ref["ours"]["idle_pss_mib"], ref["ours"]["provision_per_s"]
        host = int(usable / per_mib)
        per_node = min(KUBELET_MAX_PODS, host)
        knee = max(1, round(SCHEDULER_QPS / rate))  # nodes whose engines out-create the scheduler
        out[config] = {
            "idle_mib": per_mib,
            "create_per_s": rate,
            "host_instances": host,
            "k8s_instances_per_node": per_node,
            "k8s_nodes_at_scheduler_limit": knee,
            "k8s_writes_per_pod": pod_writes,
        }
        print(f"  {config}: {per_mib:.1f} MiB per idle instance, {rate:.2f} creates/s (at N={ref['n']})")
        print(
            f"    one host: {host} idle instances by memory, made in {host / rate / 60:.0f} min: the engine's"
            f" create rate is the first limit; on one docker network at most {LINUX_BRIDGE_PORTS}"
        )
        print(f"    a pool of P hosts: {host} x P instances at {rate:.2f} x P /s (client-side placement)")
        print(
            f"    Kubernetes, K such nodes: {per_node} x K instances (max pods per node, before memory),"
            f" at min({rate:.2f} x K, {SCHEDULER_QPS:g}) /s: the scheduler's API budget binds from"
            f" K = {knee}; {pod_writes} API writes per pod ({k8s_writes} ours),"
            f" {pod_writes * SCHEDULER_QPS:.0f} writes/s there"
        )
    return out


def check(scale: dict[str, Any]) -> list[dict[str, Any]]:
    """From each configuration's reference N, predict every larger N's make time and memory."""
    print("\ncheck: predicted from the reference N / measured by bench_scale (1.00 = exact)")
    heads = ("make s", "meas", "ratio", "MiB", "meas", "ratio")
    print(f"  {'config':11}{'N':>5}" + "".join(f"{h:>9}" for h in heads))
    found = []
    for config, rows in scale["configs"].items():
        if not isinstance(rows, list) or not rows:
            continue
        ref = reference(rows)
        for row in rows:
            if row["n"] <= ref["n"]:
                continue
            n, ours = row["n"], row["ours"]
            make = (n / ref["ours"]["provision_per_s"], n / ours["provision_per_s"])
            mem = (n * ref["ours"]["idle_pss_mib"], n * ours["idle_pss_mib"])
            print(
                f"  {config:11}{n:>5}{make[0]:>9.1f}{make[1]:>9.1f}{make[0] / make[1]:>9.2f}"
                f"{mem[0]:>9.0f}{mem[1]:>9.0f}{mem[0] / mem[1]:>9.2f}"
            )
            found.append({"config": config, "n": n, "make_s": make, "memory_mib": mem})
    return found


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scale", type=Path, default=RESULTS_DIR / "bench_scale.json")
    args = parser.parse_args()
    calls = {"docker": docker_calls(), "kubernetes": kubernetes_calls()}
    print_calls("docker engine API", calls["docker"])
    print_calls("Kubernetes API (counted at the wire fake)", calls["kubernetes"])
    results: dict[str, Any] = {"calls": calls}
    if args.scale.exists():
        scale = json.loads(args.scale.read_text())["results"]
        k8s_writes = writes(calls["kubernetes"]["ours"]["provision"])
        results["model"] = model(scale, k8s_writes)
        results["check"] = check(scale)
    else:
        print(f"\nno {args.scale}: run benchmarks/bench_scale.py first for the model and its check")
    save(RESULTS_DIR / "bench_capacity.json", {"scale": str(args.scale)}, results)


if __name__ == "__main__":
    main()
