"""Benchmark ``expose`` on docker: an HTTP GET through the forward next to the same GET straight to
the container's bridge address (the raw path, what a port published at create would give), in one
run, printing the ratio.

One container of the sandbox image (bridge network) serves a 1 KiB and a 1 MiB file with
``python3 -m http.server``, twice: on every address (port 8000: the forward connects to the
container's address, ``ours``) and on the container's 127.0.0.1 only (port 8001: the forward
relays through ``docker exec``, ``relay``). Each rep fetches each file once per side from
``sb.expose(...)``'s URL or from ``http://<container ip>:8000`` (``raw``), the sides taking turns
going first. Each GET is a new TCP connection (urllib). Bodies are checked outside the timing.
The container is removed at the end, even on error or Ctrl-C. Prints medians and p95 (ms) and each
side over raw; saves all samples to benchmarks/results/bench_ports.json.

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
        sb.start(f"python3 -m http.server {PORT + 1} --bind 127.0.0.1 --directory site")
        ip = provider.api.inspect_container(container_name(sb.id))["NetworkSettings"]["IPAddress"]
        sides = {"ours": sb.expose(PORT), "relay": sb.expose(PORT + 1), "raw": f"http://{ip}:{PORT}"}
        for base in sides.values():
            wait_for(f"{base}/1k")
        for name in FILES:
            assert len({get(f"{base}/{name}") for base in sides.values()}) == 1, name
        samples: dict[str, dict[str, list[float]]] = {name: {side: [] for side in sides} for name in FILES}
        for rep in range(warmup + n):
            for name in FILES:
                order = list(sides)[rep % 3 :] + list(sides)[: rep % 3]
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
    print(f"{'GET':<4} {'side':<6} {'p50 ms':>8} {'p95 ms':>8} {'/raw':>7}")
    for name, sides in samples.items():
        raw = statistics.median(sides["raw"])
        for side, xs in sides.items():
            p50 = statistics.median(xs)
            print(f"{name:<4} {side:<6} {p50:>8.1f} {p95(xs):>8.1f} {p50 / raw:>6.1f}x")
    save(Path(__file__).parent / "results" / "bench_ports.json", {"n": args.n}, samples)


if __name__ == "__main__":
    main()
