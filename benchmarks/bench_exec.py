"""Benchmark praisonai's exec and file hot paths against their raw floors, side by side in one run.

Measured (ours vs raw; p50/p95 in ms, or commands/s for throughput):

* docker exec ``true`` on a warm instance: ``DockerCompute.execute(iid, "true")`` (persistent
  helper channel, opened by the untimed warm-up) vs docker-py ``Container.exec_run(["true"])``.
* docker throughput, 16 concurrent callers on ONE instance: 16 anyio tasks sharing the provider
  (``--total`` commands in all) vs 16 threads calling ``exec_run(["true"])`` (``--raw-each`` each).
* docker ``write_file`` 1 KiB and 10 MiB vs building a tar in memory + ``put_archive``.
* docker ``read_file`` 1 KiB vs ``get_archive`` + untar (informational; reads are verified).
* local exec ``true``: ``LocalCompute.execute`` vs bare ``asyncio.create_subprocess_exec("true")``.
* the peer ``praisonai-sandbox`` docker exec ``true`` (peer column), only when it is importable.

The raw container has the same settings as ours (see benchmarks/bench_docker.py) and carries the
labels ``praisonai.bench=1`` and a per-run label. Latency reps run back to back per side (steady
state); ``--interleave`` alternates sides rep by rep instead (each call then follows the other
side's, e.g. ~75 ms of raw docker work). Every container and instance is removed at the end, even
on error or Ctrl-C. Prints a markdown table with PASS/FAIL per target; saves all samples as JSON
(default benchmarks/results/bench_exec.json, gitignored).

    python3 benchmarks/bench_exec.py [--n 200] [--n-big 40] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import io
import json
import math
import os
import platform
import shutil
import statistics
import sys
import tarfile
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import docker

sys.path.insert(0, str(Path(__file__).parent))
from _common import p95, timed

from praisonai.compute.providers.docker import DockerCompute
from praisonai.compute.providers.local import LocalCompute

RUN_ID = uuid.uuid4().hex[:12]
LABELS = {"praisonai.bench": "1", "praisonai.bench.run": RUN_ID}
CAPS = ["CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID", "NET_BIND_SERVICE"]
DATA = {"1k": os.urandom(1024), "10m": os.urandom(10 * 1024 * 1024)}
CALLERS = 16
PEER_INSTALLED = importlib.util.find_spec("praisonai_sandbox") is not None
RESULTS = Path(__file__).parent / "results" / "bench_exec.json"
Samples = dict[str, dict[str, list[float]]]  # op -> side ("ours" | "raw" | "peer") -> values
# op: (label, target kind, limit, target text). Kinds: "p50" ours median <= limit (ms);
# "ratio" ours/raw median <= limit; "rate" ours commands/s >= limit; None: informational.
OPS: dict[str, tuple[str, str | None, float, str]] = {
    "exec": ("docker exec true (ms)", "p50", 3.0, "ours p50 <= 3 ms"),
    "tput": (
        f"docker exec true, {CALLERS} callers (cmd/s, per-call p95)",
        "rate",
        200.0,
        "ours >= 200 cmd/s",
    ),
    "write_1k": ("docker write 1 KiB (ms)", "p50", 5.0, "ours p50 <= 5 ms"),
    "write_10m": ("docker write 10 MiB (ms)", "ratio", 1.0, "ours p50 <= raw p50"),
    "read_1k": ("docker read 1 KiB (ms)", None, 0.0, "informational"),
    "local_exec": ("local exec true (ms; raw = bare subprocess)", "ratio", 1.5, "ours <= 1.5x bare"),
}


def tar_one(name: str, data: bytes) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def untar_one(chunks: Any) -> bytes:
    with tarfile.open(fileobj=io.BytesIO(b"".join(chunks))) as tar:
        return tar.extractfile(tar.getmembers()[0]).read()  # type: ignore[union-attr]


def raw_container(api: Any, image: str) -> str:
    """A container with bench_docker.py's settings (which are also ours)."""
    host_config = api.create_host_config(
        init=True,
        cap_drop=["ALL"],
        cap_add=CAPS,
        security_opt=["no-new-privileges:true"],
        pids_limit=4096,
        nano_cpus=int(1e9),
        mem_limit="1024m",
        network_mode="bridge",
    )
    cid = api.create_container(
        image,
        command=["sleep", "infinity"],
        labels=LABELS,
        working_dir="/workspace",
        host_config=host_config,
        detach=True,
    )["Id"]
    api.start(cid)
    return str(cid)


async def latency(
    samples: Samples,
    op: str,
    sides: dict[str, Callable[[], Awaitable[Any]]],
    n: int,
    args: argparse.Namespace,
    check: Callable[[str, Any], None] | None = None,
) -> None:
    """``warmup`` untimed then ``n`` timed reps per side: back to back per side, or (with
    ``--interleave``) alternating sides rep by rep, so each call follows the other side's."""
    order, reps = list(sides), range(args.warmup + n)
    plan = (
        [(rep, s) for rep in reps for s in (order if rep % 2 == 0 else order[::-1])]
        if args.interleave
        else [(rep, s) for s in order for rep in reps]
    )
    for rep, side in plan:
        ms, result = await timed(sides[side])
        if check is not None:
            check(side, result)
        if rep >= args.warmup:
            samples.setdefault(op, {}).setdefault(side, []).append(ms)


async def ours_throughput(p: DockerCompute, iid: str, total: int) -> tuple[float, list[float]]:
    each, calls = math.ceil(total / CALLERS), []

    async def caller() -> None:
        for _ in range(each):
            ms, result = await timed(lambda: p.execute(iid, "true"))
            assert result.exit_code == 0
            calls.append(ms)

    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(CALLERS):
            tg.start_soon(caller)
    return len(calls) / (time.perf_counter() - start), calls


def raw_throughput(container: Any, each: int) -> tuple[float, list[float]]:
    calls: list[float] = []

    def caller() -> None:
        for _ in range(each):
            start = time.perf_counter()
            assert container.exec_run(["true"]).exit_code == 0
            calls.append((time.perf_counter() - start) * 1000)

    start = time.perf_counter()
    with ThreadPoolExecutor(CALLERS) as pool:
        for future in [pool.submit(caller) for _ in range(CALLERS)]:
            future.result()
    return len(calls) / (time.perf_counter() - start), calls


async def bare_true() -> int:
    proc = await asyncio.create_subprocess_exec("true")
    return await proc.wait()


async def bench(args: argparse.Namespace, client: Any) -> tuple[Samples, dict[str, float], list[str]]:
    api, samples, rates, errors = client.api, {}, {}, []  # type: ignore[var-annotated]
    root = tempfile.mkdtemp(prefix="praisonai_bench_")
    ours, local = DockerCompute(image=args.image), LocalCompute(root=root)
    cleanups: list[Callable[[], Awaitable[Any]]] = [
        lambda: anyio.to_thread.run_sync(lambda: shutil.rmtree(root, ignore_errors=True))
    ]
    try:
        iid = (await ours.provision({"labels": LABELS})).instance_id
        cleanups.append(lambda: ours.shutdown(iid))
        cid = raw_container(api, args.image)
        cleanups.append(lambda: anyio.to_thread.run_sync(lambda: api.remove_container(cid, force=True)))
        lid = (await local.provision()).instance_id
        cleanups.append(lambda: local.shutdown(lid))
        container = client.containers.get(cid)  # untimed: raw exec runs on a fetched object

        async def ours_exec() -> int:
            return (await ours.execute(iid, "true")).exit_code

        async def raw_exec() -> int:
            return int(container.exec_run(["true"]).exit_code)

        execs: dict[str, Callable[[], Awaitable[Any]]] = {"ours": ours_exec, "raw": raw_exec}
        if PEER_INSTALLED:
            try:
                execs["peer"] = await peer(args, cleanups)
            except Exception as exc:  # the peer's failure is a finding, not ours
                errors.append(f"peer provision failed: {exc!r}")
        await latency(samples, "exec", execs, args.n, args, exited_0)

        await ours_throughput(ours, iid, CALLERS * 2)  # untimed warm-up of both sides
        raw_throughput(container, 1)
        rates["ours"], samples.setdefault("tput", {})["ours"] = await ours_throughput(ours, iid, args.total)
        rates["raw"], samples["tput"]["raw"] = raw_throughput(container, args.raw_each)

        for size, n in (("1k", args.n), ("10m", args.n_big)):
            data = DATA[size]

            async def ours_write(d: bytes = data) -> None:
                await ours.write_file(iid, "/workspace/f.bin", d)

            async def raw_write(d: bytes = data) -> None:
                api.put_archive(cid, "/workspace", tar_one("f.bin", d))

            await latency(samples, f"write_{size}", {"ours": ours_write, "raw": raw_write}, n, args)

        await ours.write_file(iid, "/workspace/r.bin", DATA["1k"])
        api.put_archive(cid, "/workspace", tar_one("r.bin", DATA["1k"]))

        async def raw_read() -> bytes:
            return untar_one(api.get_archive(cid, "/workspace/r.bin")[0])

        def same(side: str, got: Any) -> None:
            assert got == DATA["1k"], f"{side} read back {len(got)} bytes that differ"

        ours_read = lambda: ours.read_file(iid, "/workspace/r.bin")  # noqa: E731
        await latency(samples, "read_1k", {"ours": ours_read, "raw": raw_read}, args.n, args, same)

        async def local_exec() -> int:
            return (await local.execute(lid, "true")).exit_code

        await latency(samples, "local_exec", {"ours": local_exec, "raw": bare_true}, args.n, args, exited_0)
    finally:
        with anyio.CancelScope(shield=True):
            for cleanup in reversed(cleanups):
                try:
                    await cleanup()
                except Exception as exc:
                    print(f"cleanup failed: {exc!r}", file=sys.stderr)
    return samples, rates, errors


def exited_0(side: str, code: Any) -> None:
    assert code == 0, f"{side} exec true exited {code}"


async def peer(
    args: argparse.Namespace, cleanups: list[Callable[[], Awaitable[Any]]]
) -> Callable[[], Awaitable[int]]:
    """Provision a peer praisonai-sandbox instance; return its exec of ``true``."""
    from praisonai_sandbox.compute.docker import DockerCompute as PeerDocker  # type: ignore
    from praisonaiagents.managed import ComputeConfig  # type: ignore

    provider = PeerDocker()
    pid = str((await provider.provision(ComputeConfig(image=args.image))).instance_id)
    cleanups.append(lambda: provider.shutdown(pid))

    async def peer_exec() -> int:
        result = await provider.execute(pid, "true")  # the peer returns a dict
        return int(result["exit_code"] if isinstance(result, dict) else result.exit_code)

    return peer_exec


def sweep(client: Any) -> None:
    """Last resort (e.g. Ctrl-C mid-create): remove anything carrying this run's label."""
    for c in client.containers.list(all=True, filters={"label": f"praisonai.bench.run={RUN_ID}"}):
        try:
            c.remove(force=True)
        except docker.errors.APIError as exc:  # 404/409: already gone or being removed
            if exc.status_code not in (404, 409):
                print(f"cleanup: {c.id}: {exc}", file=sys.stderr)


def report(samples: Samples, rates: dict[str, float]) -> tuple[dict[str, Any], list[str]]:
    stats: dict[str, Any] = {}
    lines = [
        "| op | ours p50 | ours p95 | raw p50 | raw p95 | ours/raw | peer p50 | target |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for op, (label, kind, limit, text) in OPS.items():
        row: dict[str, dict[str, Any]] = {
            side: {"p50": statistics.median(xs), "p95": p95(xs), "samples_ms": xs}
            for side, xs in samples.get(op, {}).items()
        }
        key = "rate" if op == "tput" else "p50"  # tput: commands/s, then per-call p95 under load
        for side in rates if op == "tput" else ():
            row[side]["rate"] = rates[side]
        cells = [
            (f"{row[s]['rate']:.0f}/s", f"{row[s]['p95']:.1f} ms")
            if key == "rate"
            else (f"{row[s]['p50']:.2f}", f"{row[s]['p95']:.2f}")
            if s in row
            else ("", "")
            for s in ("ours", "raw")
        ]
        ratio = row["ours"][key] / row["raw"][key] if "ours" in row and "raw" in row else None
        value = ratio if kind == "ratio" else row.get("ours", {}).get(key)
        ok = None if kind is None or value is None else value >= limit if kind == "rate" else value <= limit
        peer_cell = (
            "-"
            if op != "exec"
            else "peer not installed"
            if not PEER_INSTALLED
            else (f"{row['peer']['p50']:.2f} (p95 {row['peer']['p95']:.2f})" if "peer" in row else "failed")
        )
        lines.append(
            f"| {label} | {' | '.join(cells[0] + cells[1])} | "
            f"{f'{ratio:.2f}x' if ratio else ''} | {peer_cell} | "
            f"{text}{'' if ok is None else ' PASS' if ok else ' FAIL'} |"
        )
        stats[op] = {**row, "ours_over_raw": ratio, "target": text, "pass": ok}
    return stats, lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="timed reps per latency op (200)")
    parser.add_argument("--n-big", type=int, default=40, help="timed reps of the 10 MiB write (40)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed reps first (5)")
    parser.add_argument("--total", type=int, default=800, help="our commands in the throughput run")
    parser.add_argument("--raw-each", type=int, default=10, help="raw commands per thread (10)")
    parser.add_argument("--image", default="praisonai-sandbox:latest")
    parser.add_argument("--interleave", action="store_true", help="alternate sides rep by rep")
    parser.add_argument("--json", type=Path, default=RESULTS, help=f"results file ({RESULTS.name})")
    args = parser.parse_args()

    client = docker.from_env(max_pool_size=2 * CALLERS)  # raw side; 16 threads share its pool
    started = time.perf_counter()
    try:
        samples, rates, errors = anyio.run(bench, args, client)
    finally:
        sweep(client)
    stats, lines = report(samples, rates)
    print(
        f"\nn={args.n} n_big={args.n_big} warmup={args.warmup} throughput: ours {args.total} "
        f"cmds, raw {CALLERS}x{args.raw_each}; image={args.image} "
        f"({time.perf_counter() - started:.0f}s)\n"
    )
    print("\n".join(lines))
    for error in errors:
        print(f"  {error}")

    args.json.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "n": args.n,
        "n_big": args.n_big,
        "warmup": args.warmup,
        "total": args.total,
        "raw_each": args.raw_each,
        "callers": CALLERS,
        "image": args.image,
        "run_id": RUN_ID,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": platform.python_version(),
        "docker_py": docker.__version__,
        "engine": client.version().get("Version"),
        "peer_installed": PEER_INSTALLED,
        "cpus": os.cpu_count(),
    }
    args.json.write_text(json.dumps({**meta, "results": stats, "errors": errors}, indent=2))
    print(f"\nsaved {args.json}")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit("interrupted; the benchmark's containers were removed")
