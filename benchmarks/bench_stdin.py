"""Benchmark a streamed stdin (``sandbox exec -i``) against docker-py's attached exec, side by side.

Measured on one warm docker instance each (ours: ``DockerCompute.execute`` with an async iterable
as ``stdin``, through the helper channel; raw: docker-py ``exec_create(stdin=True)`` and the
attached socket, as ``docker exec -i`` does):

* a line's round trip: a line written to a command that answers each line as it reads it
  (``while read``), until its answer is back; ``--lines`` of them in one command.
* throughput: ``--mib`` MiB streamed into ``wc -c`` in 1 MiB chunks, until the count is back.

Informational (issue 31 set no target for it): the ratio says what streaming through the helper
costs over the engine's own attach. Every container and instance is removed at the end.

    python3 benchmarks/bench_stdin.py [--lines 50] [--mib 32] [--reps 5]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import docker
from docker.utils.socket import frames_iter

sys.path.insert(0, str(Path(__file__).parent))
from _common import RESULTS_DIR, save, summary

from praisonai.compute.providers.docker import DockerCompute

ECHO = 'while read -r l; do echo "got $l"; done'
CHUNK = os.urandom(1 << 20)


async def ours_round_trips(provider: DockerCompute, iid: str, lines: int) -> list[float]:
    """Each line's round trip (ms) through a streamed stdin and the output stream."""
    said, answered, took = bytearray(), anyio.Event(), []

    def sink(name: str, data: bytes) -> None:
        said.extend(data)
        if said.count(b"\n") > len(took):
            answered.set()

    async def feed() -> AsyncIterator[bytes]:
        nonlocal answered
        for i in range(lines):
            started = time.perf_counter()
            yield f"{i}\n".encode()
            await answered.wait()
            took.append((time.perf_counter() - started) * 1000)
            answered = anyio.Event()

    result = await provider.execute(iid, ECHO, stdin=feed(), on_output=sink, timeout=300)
    assert result.exit_code == 0 and result.stdout.count("got") == lines, result
    return took


def raw_round_trips(api: Any, cid: str, lines: int) -> list[float]:
    """The same through docker-py's attached exec."""
    made = api.exec_create(cid, ["sh", "-c", ECHO], stdin=True)
    stream = api.exec_start(made["Id"], socket=True)
    raw: socket.socket = stream._sock
    frames, took = frames_iter(stream, tty=False), []
    for i in range(lines):
        started = time.perf_counter()
        raw.sendall(f"{i}\n".encode())
        got = b""
        while not got.endswith(b"\n"):
            got += next(frames)[1]
        took.append((time.perf_counter() - started) * 1000)
    raw.shutdown(socket.SHUT_WR)
    for _ in frames:
        pass
    stream.close()
    return took


async def ours_throughput(provider: DockerCompute, iid: str, mib: int) -> float:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(mib):
            yield CHUNK

    started = time.perf_counter()
    result = await provider.execute(iid, "wc -c", stdin=chunks(), timeout=300)
    assert result.stdout.strip() == str(mib << 20), result
    return (time.perf_counter() - started) * 1000


def raw_throughput(api: Any, cid: str, mib: int) -> float:
    started = time.perf_counter()
    made = api.exec_create(cid, ["wc", "-c"], stdin=True)
    stream = api.exec_start(made["Id"], socket=True)
    raw: socket.socket = stream._sock

    def feed() -> None:
        for _ in range(mib):
            raw.sendall(CHUNK)
        raw.shutdown(socket.SHUT_WR)

    feeder = threading.Thread(target=feed)
    feeder.start()
    out = b"".join(data for kind, data in frames_iter(stream, tty=False) if kind == 1)
    feeder.join()
    stream.close()
    assert out.strip() == str(mib << 20).encode(), out
    return (time.perf_counter() - started) * 1000


def raw_container(client: Any, image: str) -> Iterator[Any]:
    container = client.containers.run(image, ["sleep", "infinity"], detach=True, init=True)
    try:
        yield container
    finally:
        container.remove(force=True)


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    client, provider = docker.from_env(), DockerCompute(image=args.image)
    iid = (await provider.provision()).instance_id
    try:
        for container in raw_container(client, args.image):
            cid = container.id
            await ours_round_trips(provider, iid, 3)  # untimed: the helper channel opens
            raw_round_trips(client.api, cid, 3)
            trips: dict[str, list[float]] = {"ours": [], "raw": []}
            rates: dict[str, list[float]] = {"ours": [], "raw": []}
            for _ in range(args.reps):  # taking turns, so both sides see the same machine
                trips["ours"] += await ours_round_trips(provider, iid, args.lines)
                trips["raw"] += await anyio.to_thread.run_sync(raw_round_trips, client.api, cid, args.lines)
                rates["ours"].append(await ours_throughput(provider, iid, args.mib))
                rates["raw"].append(await anyio.to_thread.run_sync(raw_throughput, client.api, cid, args.mib))
    finally:
        await provider.shutdown(iid)
    return {
        "round_trip_ms": {side: summary(xs) for side, xs in trips.items()},
        f"stream_{args.mib}_mib_ms": {side: summary(xs) for side, xs in rates.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--lines", type=int, default=50, help="lines per command (50)")
    parser.add_argument("--mib", type=int, default=32, help="MiB streamed per throughput rep (32)")
    parser.add_argument("--reps", type=int, default=5, help="turns of each side (5)")
    parser.add_argument("--image", default="praisonai-sandbox:latest")
    args = parser.parse_args()
    results = anyio.run(bench, args)
    print("| what | ours p50 | ours p95 | raw p50 | raw p95 | ours/raw (p50) |")
    print("|---|---:|---:|---:|---:|---:|")
    for what, sides in results.items():
        ours, raw = sides["ours"], sides["raw"]
        ratio = ours["p50"] / raw["p50"]
        cells = [f"{side[q]:.1f}" for side in (ours, raw) for q in ("p50", "p95")]
        print(f"| {what} | {' | '.join(cells)} | {ratio:.2f}x |")
    mib = args.mib
    for side in ("ours", "raw"):
        rate = mib / (statistics.median(results[f"stream_{mib}_mib_ms"][side]["samples_ms"]) / 1000)
        print(f"{side}: {rate:.0f} MiB/s streamed")
    save(RESULTS_DIR / "bench_stdin.json", vars(args), results)


if __name__ == "__main__":
    main()
