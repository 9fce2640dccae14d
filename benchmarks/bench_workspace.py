"""Benchmark the workspace upload on docker against the raw ways of copying a tree into a
container, in one run: ``tar -cf - . | docker exec -i C tar -xf -`` (a pipe, as a user types it)
and ``docker cp``. Ours is ``Sandbox.upload_workspace``: the tree's files as git would list them
(.gitignore honoured), streamed through a spooled archive into the engine's archive API, plus the
baseline commit that ``diff`` needs. ``ours: plain upload`` is ``Sandbox.upload`` of the same
tree (streamed too since this change; no filter, no baseline).

The tree is ``--files`` files of random bytes totalling ``--mib`` MiB. Each rep copies into a
fresh directory of one container; the sides take turns going first. Also measured: the peak
memory of a child process that uploads the tree (it held it whole before: 236 MiB for 200 MiB).
Prints medians and p95 (ms) and the ratios ours/raw; saves benchmarks/results/bench_workspace.json.

    python benchmarks/bench_workspace.py [--n 5] [--mib 200] [--files 200]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import save, summary

from praisonai import Sandbox
from praisonai.compute.providers.docker._client import container_name
from praisonai.compute.workspace import BASELINE_DIR

MEASURE = """
import resource, sys
from praisonai import Sandbox
with Sandbox.create("docker", environment=False) as sb:
    sb.upload_workspace(sys.argv[1])
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
"""


def make_tree(root: Path, mib: int, files: int) -> None:
    size = (mib << 20) // files
    for i in range(files):
        (root / f"d{i % 10}").mkdir(exist_ok=True)
        (root / f"d{i % 10}" / f"f{i:04d}.bin").write_bytes(os.urandom(size))


def timed(fn: Callable[[str], object], to: str) -> float:
    started = time.perf_counter()
    fn(to)
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=5)
    parser.add_argument("--mib", type=int, default=200)
    parser.add_argument("--files", type=int, default=200)
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="bench-workspace-") as scratch,
        Sandbox.create("docker", environment=False) as sb,
    ):
        tree = Path(scratch)
        make_tree(tree, args.mib, args.files)
        container = container_name(sb.id)

        def pipe(to: str) -> None:
            script = f"tar -C {tree} -cf - . | docker exec -i {container} tar -xf - -C {to}"
            subprocess.run(["docker", "exec", container, "mkdir", "-p", to], check=True)
            subprocess.run(script, shell=True, check=True)

        def docker_cp(to: str) -> None:
            subprocess.run(["docker", "cp", f"{tree}/.", f"{container}:{to}"], check=True)

        sides: dict[str, Callable[[str], object]] = {
            "ours": lambda to: sb.upload_workspace(tree, to),
            "ours: plain upload": lambda to: sb.upload(tree, to),
            "tar | docker exec": pipe,
            "docker cp": docker_cp,
        }
        samples: dict[str, list[float]] = {name: [] for name in sides}
        for rep in range(args.n):
            order = list(sides)[rep % len(sides) :] + list(sides)[: rep % len(sides)]
            for name in order:
                to = f"/tmp/copy-{rep}-{list(sides).index(name)}"
                samples[name].append(timed(sides[name], to))
                sb.exec(f"rm -rf {to}", check=True)
        measure = [sys.executable, "-c", MEASURE, str(tree)]
        child = subprocess.run(measure, capture_output=True, text=True, check=True)
    report(samples, int(child.stdout), args)


def report(samples: dict[str, list[float]], peak_mib: int, args: argparse.Namespace) -> None:
    raw = statistics.median(samples["tar | docker exec"])
    print(f"upload of {args.mib} MiB in {args.files} files to docker, {args.n} reps (ms)")
    for name, xs in samples.items():
        p50 = statistics.median(xs)
        print(f"  {name:<20} p50 {p50:8.0f}  p95 {max(xs):8.0f}  ours-side/raw-pipe {p50 / raw:5.2f}x")
    print(f"peak memory of a process uploading {args.mib} MiB: {peak_mib} MiB (baseline dir: {BASELINE_DIR})")
    results = {name: summary(xs) for name, xs in samples.items()}
    results["peak_rss_mib"] = peak_mib  # type: ignore[assignment]
    save(Path(__file__).parent / "results" / "bench_workspace.json", vars(args), results)


if __name__ == "__main__":
    main()
