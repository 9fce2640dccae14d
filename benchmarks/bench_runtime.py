"""What gVisor costs: docker instances under runc and under runsc, side by side, same image and
config (``network: none``, the one policy both registrations honour), through ``DockerCompute``.

Per runtime:

* provision to first exec: ``provision()`` (create, start, for runsc the kernel check) then
  ``execute("true")``, one instance after another (``--instances``), p50/p99;
* exec ``true``: ``--execs`` calls on one live instance through its helper channel, p50/p99;
* idle host memory per instance: with ``--instances`` instances live and idle, the proportional
  set size (PSS, from ``/proc/PID/smaps_rollup``) of each instance's containerd shim and every
  process under it (runc: the container's processes; runsc: the gVisor sentry, gofer and
  theirs), median over instances. Page cache and kernel memory are not counted.

Needs an engine with runsc registered (see the README). Every instance made is shut down.
Results JSON: benchmarks/results/bench_runtime.json.

    python3 benchmarks/bench_runtime.py [--instances 10] [--execs 300]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import RESULTS_DIR, children, pss_kib, save, shim_of

from praisonai import _portal
from praisonai.compute.providers.docker import DockerCompute, container_name

CONFIG = {"network": "none"}


def pct(xs: list[float], q: float) -> float:
    ordered = sorted(xs)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def spread(xs: list[float]) -> dict[str, float]:
    return {"p50": statistics.median(xs), "p99": pct(xs, 0.99)}


def ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


def measure(runtime: str, instances: int, execs: int) -> dict[str, Any]:
    provider = DockerCompute(runtime=runtime)  # type: ignore[arg-type]
    made: list[str] = []
    try:
        to_first_exec = []
        for _ in range(instances):
            start = time.perf_counter()
            info = _portal.call(provider.provision, CONFIG)
            made.append(info.instance_id)
            assert _portal.call(provider.execute, info.instance_id, "true").exit_code == 0
            to_first_exec.append(ms(start))
        exec_true = []
        for _ in range(execs):
            start = time.perf_counter()
            _portal.call(provider.execute, made[0], "true")
            exec_true.append(ms(start))
        time.sleep(2)  # idle: the helpers' start-up work is done
        tree = children()
        api = provider.api
        ids = [api.inspect_container(container_name(i))["Id"] for i in made]
        memory = [pss_kib(shim_of(cid), tree) / 1024 for cid in ids]
        kernel = _portal.call(provider.execute, made[0], "uname -r").stdout.strip()
    finally:
        for instance_id in made:
            _portal.call(provider.shutdown, instance_id)
    return {
        "kernel": kernel,
        "provision_to_first_exec_ms": spread(to_first_exec),
        "exec_true_ms": spread(exec_true),
        "idle_pss_mib_per_instance": {"median": statistics.median(memory), "max": max(memory)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=10)
    parser.add_argument("--execs", type=int, default=300)
    args = parser.parse_args()
    results = {rt: measure(rt, args.instances, args.execs) for rt in ("runc", "runsc")}
    print(f"{'':28}{'runc':>12}{'runsc':>12}")
    rows = [
        ("kernel", "kernel", None),
        ("provision→first exec p50 ms", "provision_to_first_exec_ms", "p50"),
        ("provision→first exec p99 ms", "provision_to_first_exec_ms", "p99"),
        ("exec true p50 ms", "exec_true_ms", "p50"),
        ("exec true p99 ms", "exec_true_ms", "p99"),
        ("idle PSS MiB/instance", "idle_pss_mib_per_instance", "median"),
    ]
    for label, key, sub in rows:
        cells = [results[rt][key] if sub is None else f"{results[rt][key][sub]:.1f}" for rt in results]
        print(f"{label:28}{cells[0]:>12}{cells[1]:>12}")
    save(RESULTS_DIR / "bench_runtime.json", vars(args), results)


if __name__ == "__main__":
    main()
