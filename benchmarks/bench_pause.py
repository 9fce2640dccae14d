"""Benchmark pause and resume on docker, in one run, next to a cold provision and raw docker-py.

Each rep times, on the same engine:

* cold: ``provision({"idle_action": "pause"})`` and its first command (``true``): a new instance;
* pause: ``provider.pause`` (the container stopped and kept);
* resume: ``provider.resume`` and the next command (the container started again, its main
  channel re-established): what a session pays to get its paused workspace back;
* freeze, thaw: the same two steps for an instance made with the default ``idle_action`` (frozen
  by ``docker pause``, its processes kept in memory; thawed, then the next command);
* raw: docker-py on a container of the same image (``sleep infinity`` under docker-init):
  ``container.stop`` and ``container.start`` + ``exec_run("true")``, the floor of the same path,
  and ``container.pause`` and ``container.unpause`` + ``exec_run("true")``, the frozen path's.

Printed: p50/p95 of each, and the ratios ours / raw (pause / stop, resume / start+exec) and
resume / cold. Everything runs in a throwaway PRAISONAI_HOME; every container made is removed.
Results JSON: benchmarks/results/bench_pause.json.

    python3 benchmarks/bench_pause.py [--reps 5]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import RESULTS_DIR, save, summary

IMAGE = "praisonai-sandbox:latest"
LABELS = {"praisonai.bench": "1", "praisonai.bench.run": uuid.uuid4().hex[:12]}


def ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


def ours(reps: int, idle_action: str, cold: str, pause: str, resume: str) -> dict[str, list[float]]:
    """Times of ``cold``, ``pause`` and ``resume`` for instances made with ``idle_action``."""
    from praisonai import _portal
    from praisonai.compute.providers.docker import DockerCompute

    provider = DockerCompute()
    times: dict[str, list[float]] = {cold: [], pause: [], resume: []}
    for _ in range(reps):
        start = time.perf_counter()
        iid = _portal.call(provider.provision, {"idle_action": idle_action, "labels": LABELS}).instance_id
        try:
            _portal.call(provider.execute, iid, "true")
            times[cold].append(ms(start))
            start = time.perf_counter()
            _portal.call(provider.pause, iid)
            times[pause].append(ms(start))
            start = time.perf_counter()
            _portal.call(provider.resume, iid)
            assert _portal.call(provider.execute, iid, "true").exit_code == 0
            times[resume].append(ms(start))
        finally:
            _portal.call(provider.shutdown, iid)
    return times


def raw(reps: int) -> dict[str, list[float]]:
    import docker

    client = docker.from_env()
    times: dict[str, list[float]] = {"stop": [], "start": [], "raw pause": [], "unpause": []}
    for _ in range(reps):
        container = client.containers.run(IMAGE, ["sleep", "infinity"], detach=True, init=True, labels=LABELS)
        try:
            container.exec_run("true")
            start = time.perf_counter()
            container.pause()
            times["raw pause"].append(ms(start))
            start = time.perf_counter()
            container.unpause()
            assert container.exec_run("true").exit_code == 0
            times["unpause"].append(ms(start))
            start = time.perf_counter()
            container.stop(timeout=5)
            times["stop"].append(ms(start))
            start = time.perf_counter()
            container.start()
            assert container.exec_run("true").exit_code == 0
            times["start"].append(ms(start))
        finally:
            container.remove(force=True)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-pause-") as home:
        os.environ["PRAISONAI_HOME"] = home
        kept = ours(args.reps, "pause", "cold", "pause", "resume")
        frozen = ours(args.reps, "stop", "cold, then frozen", "freeze", "thaw")  # its cold is the same
        measured = {**kept, "freeze": frozen["freeze"], "thaw": frozen["thaw"], **raw(args.reps)}
    stats: dict[str, Any] = {name: summary(xs) for name, xs in measured.items()}
    for name, s in stats.items():
        print(f"{name:>9}: p50 {s['p50']:8.1f} ms   p95 {s['p95']:8.1f} ms")
    ratios = {
        "pause / raw stop": stats["pause"]["p50"] / stats["stop"]["p50"],
        "resume / raw start+exec": stats["resume"]["p50"] / stats["start"]["p50"],
        "resume / cold provision": stats["resume"]["p50"] / stats["cold"]["p50"],
        "freeze / raw pause": stats["freeze"]["p50"] / stats["raw pause"]["p50"],
        "thaw / raw unpause+exec": stats["thaw"]["p50"] / stats["unpause"]["p50"],
    }
    for name, ratio in ratios.items():
        print(f"{name}: {ratio:.2f}x")
    save(RESULTS_DIR / "bench_pause.json", {"reps": args.reps}, {"stats": stats, "ratios": ratios})


if __name__ == "__main__":
    main()
