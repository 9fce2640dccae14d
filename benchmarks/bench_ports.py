"""Benchmark ``expose`` on docker: an HTTP GET through the forward next to the same GET straight to
the container's bridge address (the raw path, what a port published at create would give), in one
run, printing the ratio.

One container of the sandbox image (bridge network) serves a 1 KiB and a 1 MiB file with
``python3 -m http.server``; each rep fetches each file once through ``sb.expose(8000)``'s URL and
once from ``http://<container ip>:8000``, the two sides taking turns going first. Each GET is a new
TCP connection (urllib), so ours includes the ``docker exec`` of its relay. Bodies are checked
outside the timing. The container is removed at the end, even on error or Ctrl-C. Prints medians
and p95 (ms) and ours/raw; saves all samples to benchmarks/results/bench_ports.json.

    python benchmarks/bench_ports.py [--n 20] [--warmup 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import p95, save

from praisonai import Sandbox
from praisonai.compute.providers.docker import DockerCompute, container_name

FILES = {"1k": 1024, "1m": 1024 * 1024}
PORT = 8000


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as answer:
        return bytes(answer.read())


def timed(url: str) -> float:
    started = time.perf_counter()
    get(url)
    return (time.perf_counter() - started) * 1000


def wait_for(url: str) -> None:
    for _ in range(100):
        try:
            get(url)
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"the server at {url} did not answer")


def run(n: int, warmup: int) -> dict[str, Any]:
    provider = DockerCompute()
    with Sandbox.create(provider) as sb:
        for name, size in FILES.items():
            sb.write_file(f"site/{name}", os.urandom(size))
        sb.start(f"python3 -m http.server {PORT} --directory site")
        ip = provider.api.inspect_container(container_name(sb.id))["NetworkSettings"]["IPAddress"]
        sides = {"ours": sb.expose(PORT), "raw": f"http://{ip}:{PORT}"}
        for base in sides.values():
            wait_for(f"{base}/1k")
        for name in FILES:
            assert get(f"{sides['ours']}/{name}") == get(f"{sides['raw']}/{name}"), name
        samples: dict[str, dict[str, list[float]]] = {name: {"ours": [], "raw": []} for name in FILES}
        for rep in range(warmup + n):
            for name in FILES:
                order = ["ours", "raw"] if rep % 2 == 0 else ["raw", "ours"]
                for side in order:
                    ms = timed(f"{sides[side]}/{name}")
                    if rep >= warmup:
                        samples[name][side].append(ms)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args()
    samples = run(args.n, args.warmup)
    print(f"{'GET':<6} {'ours ms':>9} {'p95':>8} {'raw ms':>9} {'p95':>8} {'ours/raw':>9}")
    for name, sides in samples.items():
        ours, raw = statistics.median(sides["ours"]), statistics.median(sides["raw"])
        ours_p95, raw_p95 = p95(sides["ours"]), p95(sides["raw"])
        print(f"{name:<6} {ours:>9.1f} {ours_p95:>8.1f} {raw:>9.1f} {raw_p95:>8.1f} {ours / raw:>8.1f}x")
    save(Path(__file__).parent / "results" / "bench_ports.json", {"n": args.n}, samples)


if __name__ == "__main__":
    main()
