"""Benchmark praisonai's docker provider against raw docker-py, the docker CLI (and the peer, if
installed).

Each op runs ``--warmup`` untimed then ``--n`` timed reps: ``cold`` (create a container and run
its first command, ``true``, to its result), exec ``true`` on a live container, write and read
1 KiB and 10 MiB under /workspace, shutdown (force-remove). Ours is ``AsyncSandbox.create`` on a
``DockerCompute`` then ``exec``; raw is docker-py's create_container + start + exec_run (exec
create, start, inspect: what ``Container.exec_run`` does, on an already-known id); cli is ``docker
run -d`` + one ``docker exec`` (and ``docker rm -f``), each a process, as a user types them. Files:
tar + put_archive, get_archive + untar; shutdown: remove_container(force=True).

All sides use identical container settings: 1 CPU, 1024 MiB, bridge network, docker-init,
all capabilities dropped but the same 8, no-new-privileges, pids limit 4096. Within each rep the
implementations take turns going first, to cancel drift. Reads are checked against what was
written (outside the timing). Every container carries the label ``praisonai.bench=1`` (plus a
per-run label) and is removed at the end, even on error or Ctrl-C. Prints medians and p95 (ms),
ours/raw and ours/cli ratios and PASS/MISS per target (issue 29: cold and shutdown within 1.1x);
saves all samples to benchmarks/results/bench_docker.json.

    python benchmarks/bench_docker.py [--n 20] [--warmup 2] [--image praisonai-sandbox:latest]
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import platform
import posixpath
import statistics
import subprocess
import sys
import tarfile
import time
import uuid
from pathlib import Path
from typing import Any

import anyio
import docker

sys.path.insert(0, str(Path(__file__).parent))
from _common import p95

from praisonai import AsyncSandbox
from praisonai.compute.providers.docker import DockerCompute

RUN_ID = uuid.uuid4().hex[:12]
LABELS = {"praisonai.bench": "1", "praisonai.bench.run": RUN_ID}
CAPS = ["CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID", "NET_BIND_SERVICE"]
FILE_OPS = {"1k": os.urandom(1024), "10m": os.urandom(10 * 1024 * 1024)}
OPS = ["cold", "exec", "write_1k", "read_1k", "write_10m", "read_10m", "shutdown"]
# (op, the side ours is compared with, limit): ours/that side's medians.
TARGETS = [
    ("cold", "raw", 1.1),
    ("cold", "cli", 1.1),
    ("exec", "raw", 1.15),
    ("shutdown", "raw", 1.1),
    ("shutdown", "cli", 1.1),
]
RESULTS = Path(__file__).parent / "results" / "bench_docker.json"


class Ours:
    name = "ours"

    def __init__(self, image: str) -> None:
        self.p = DockerCompute(image=image)

    async def provision(self) -> str:
        return (await self.p.provision({"labels": LABELS})).instance_id

    async def cold(self) -> str:
        """A sandbox to its first command's result."""
        sandbox = await AsyncSandbox.create(self.p, {"labels": LABELS}, environment=False)
        assert (await sandbox.exec("true")).exit_code == 0
        return sandbox.id

    async def exec(self, iid: str) -> None:
        assert (await self.p.execute(iid, "true")).exit_code == 0

    async def write(self, iid: str, path: str, data: bytes) -> None:
        await self.p.write_file(iid, path, data)

    async def read(self, iid: str, path: str) -> bytes:
        return await self.p.read_file(iid, path)

    async def shutdown(self, iid: str) -> None:
        await self.p.shutdown(iid)


class Raw:
    """docker-py called directly, in the calling thread (no worker-thread hop)."""

    name = "raw"

    def __init__(self, image: str) -> None:
        self.image = image
        self.client = docker.from_env()
        self.api = self.client.api
        self.containers: dict[str, Any] = {}

    async def provision(self) -> str:
        host_config = self.api.create_host_config(
            init=True,
            cap_drop=["ALL"],
            cap_add=CAPS,
            security_opt=["no-new-privileges:true"],
            pids_limit=4096,
            nano_cpus=int(1e9),
            mem_limit="1024m",
            network_mode="bridge",
        )
        cid = self.api.create_container(
            self.image,
            command=["sleep", "infinity"],
            labels=LABELS,
            working_dir="/workspace",
            host_config=host_config,
            detach=True,
        )["Id"]
        self.api.start(cid)
        return str(cid)

    async def exec(self, cid: str) -> None:
        assert self.containers[cid].exec_run(["sh", "-c", "true"]).exit_code == 0

    async def cold(self) -> str:
        cid = await self.provision()
        exec_id = self.api.exec_create(cid, ["true"])["Id"]  # Container.exec_run's three calls
        self.api.exec_start(exec_id)
        assert self.api.exec_inspect(exec_id)["ExitCode"] == 0
        return cid

    async def write(self, cid: str, path: str, data: bytes) -> None:
        info = tarfile.TarInfo(posixpath.basename(path))
        info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            tar.addfile(info, io.BytesIO(data))
        self.api.put_archive(cid, posixpath.dirname(path), buffer.getvalue())

    async def read(self, cid: str, path: str) -> bytes:
        stream, _ = self.api.get_archive(cid, path)
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            return tar.extractfile(tar.getmembers()[0]).read()  # type: ignore[union-attr]

    async def shutdown(self, cid: str) -> None:
        self.containers.pop(cid, None)
        self.api.remove_container(cid, force=True)


class Cli:
    """The docker CLI, one process per command, as a user types them (same container settings)."""

    name = "cli"

    def __init__(self, image: str) -> None:
        caps = [f"--cap-add={cap}" for cap in CAPS]
        labels = [f"--label={k}={v}" for k, v in LABELS.items()]
        self.run = ["docker", "run", "-d", "--init", "--cap-drop=ALL", *caps, *labels]
        self.run += ["--security-opt=no-new-privileges:true", "--pids-limit=4096", "--cpus=1"]
        self.run += ["--memory=1024m", "--network=bridge", "--workdir=/workspace", image, "sleep", "infinity"]

    async def cold(self) -> str:
        cid = subprocess.run(self.run, capture_output=True, text=True, check=True).stdout.strip()
        subprocess.run(["docker", "exec", cid, "true"], check=True)
        return cid

    async def shutdown(self, cid: str) -> None:
        subprocess.run(["docker", "rm", "-f", cid], capture_output=True, check=True)


class Peer(Ours):
    """PraisonAI's own praisonai-sandbox package, driven through the same method names."""

    name = "peer"

    def __init__(self, image: str) -> None:
        from praisonai_sandbox.compute.docker import DockerCompute as PeerDocker
        from praisonaiagents.managed import ComputeConfig

        self.p, self.cfg = PeerDocker(), ComputeConfig(image=image)

    async def provision(self) -> str:
        return str((await self.p.provision(self.cfg)).instance_id)

    async def cold(self) -> str:
        iid = await self.provision()
        await self.exec(iid)
        return iid


async def timed(fn: Any, *args: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    result = await fn(*args)
    return time.perf_counter() - start, result


def turns(impls: list[Any], rep: int) -> list[Any]:
    """Alternate who goes first each rep, so drift and ordering effects cancel."""
    return impls if rep % 2 == 0 else impls[::-1]


async def bench(impls: list[Any], n: int, warmup: int, live: dict[str, list[str]]) -> dict[str, Any]:
    samples: dict[str, dict[str, list[float]]] = {i.name: {op: [] for op in OPS} for i in impls}
    errors: dict[str, str] = {}

    def keep(impl: Any, op: str, rep: int, seconds: float) -> None:
        if rep >= warmup:
            samples[impl.name][op].append(seconds * 1000)

    for rep in range(warmup + n):  # lifecycle: cold start to a first result, then shutdown
        made = []
        for impl in turns(impls, rep):
            seconds, iid = await timed(impl.cold)
            live[impl.name].append(iid)
            made.append((impl, iid))
            keep(impl, "cold", rep, seconds)
        for impl, iid in made:  # same turn order as the provisions
            seconds, _ = await timed(impl.shutdown, iid)
            live[impl.name].remove(iid)
            keep(impl, "shutdown", rep, seconds)

    impls = [impl for impl in impls if not isinstance(impl, Cli)]  # lifecycle only
    ids = {}
    for impl in impls:  # one long-lived container per implementation for exec and files
        ids[impl.name] = await impl.provision()
        live[impl.name].append(ids[impl.name])
        if isinstance(impl, Raw):  # untimed: raw exec runs on an already-fetched object
            impl.containers[ids["raw"]] = impl.client.containers.get(ids["raw"])
    for op in OPS[1:-1]:
        for rep in range(warmup + n):
            for impl in turns(impls, rep):
                try:
                    seconds = await run_op(impl, op, ids[impl.name])
                except Exception as exc:
                    if not isinstance(impl, Peer):
                        raise
                    errors[f"peer {op}"] = repr(exc)
                    continue
                keep(impl, op, rep, seconds)
    return {"samples": samples, "errors": errors}


async def run_op(impl: Any, op: str, iid: str) -> float:
    if op == "exec":
        return (await timed(impl.exec, iid))[0]
    kind, size = op.split("_")
    path, data = f"/workspace/bench_{size}.bin", FILE_OPS[size]
    if kind == "write":
        return (await timed(impl.write, iid, path, data))[0]
    seconds, got = await timed(impl.read, iid, path)
    if got != data:
        raise RuntimeError(f"{impl.name} {op}: read back {len(got)} bytes that differ")
    return seconds


async def cleanup(impls: list[Any], live: dict[str, list[str]]) -> None:
    with anyio.CancelScope(shield=True):
        for impl in impls:
            for iid in list(live[impl.name]):
                try:
                    await impl.shutdown(iid)
                except Exception as exc:
                    print(f"cleanup: {impl.name} {iid}: {exc}", file=sys.stderr)


def sweep() -> None:
    """Last resort (e.g. after Ctrl-C mid-create): remove anything carrying this run's label."""
    client = docker.from_env()
    for c in client.containers.list(all=True, filters={"label": f"praisonai.bench.run={RUN_ID}"}):
        try:
            c.remove(force=True)
        except docker.errors.APIError as exc:  # 404/409: already gone or being removed
            if exc.status_code not in (404, 409):
                print(f"cleanup: {c.id}: {exc}", file=sys.stderr)


def summarize(samples: dict[str, dict[str, list[float]]]) -> dict[str, dict[str, dict[str, Any]]]:
    return {
        impl: {
            op: {"median_ms": statistics.median(xs), "p95_ms": p95(xs), "samples_ms": xs}
            for op, xs in ops.items()
            if xs
        }
        for impl, ops in samples.items()
    }


def ratio(stats: dict[str, Any], op: str, side: str = "raw") -> float | None:
    ours, other = stats["ours"].get(op), stats.get(side, {}).get(op)
    return ours["median_ms"] / other["median_ms"] if ours and other else None


def report(stats: dict[str, Any]) -> list[dict[str, Any]]:
    cols = [(impl, key) for impl in ("ours", "raw", "cli", "peer") for key in ("median", "p95")]
    print(f"\n{'op (ms)':<10}" + "".join(f"{f'{i} {k[:3]}':>10}" for i, k in cols) + "  ours/raw  ours/cli")
    for op in OPS:
        cells = [stats.get(i, {}).get(op, {}).get(f"{k}_ms") for i, k in cols]
        ratios = [ratio(stats, op, side) for side in ("raw", "cli")]
        print(
            f"{op:<10}"
            + "".join(f"{c:10.2f}" if c else " " * 10 for c in cells)
            + "".join(f"{r:9.2f}x" if r else " " * 10 for r in ratios)
        )
    verdicts = []
    print("\ntargets (medians):")
    for op, side, limit in TARGETS:
        value = ratio(stats, op, side)
        ok = value is not None and value <= limit
        verdict = "PASS" if ok else "MISS"
        print(f"  {op:<10} ours {value or math.nan:6.2f}x {side:<4} target <= {limit:g}x  {verdict}")
        verdicts.append({"op": op, "side": side, "value": value, "limit": limit, "pass": ok})
    return verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20, help="timed reps per op (default 20)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed reps first (default 2)")
    parser.add_argument("--image", default="praisonai-sandbox:latest")
    args = parser.parse_args()

    impls: list[Any] = [Ours(args.image), Raw(args.image), Cli(args.image)]
    try:
        impls.append(Peer(args.image))
    except ImportError:
        print("peer praisonai-sandbox: not installed")
    live: dict[str, list[str]] = {i.name: [] for i in impls}

    async def run() -> dict[str, Any]:
        try:
            return await bench(impls, args.n, args.warmup, live)
        finally:
            await cleanup(impls, live)

    started = time.perf_counter()
    try:
        result = anyio.run(run)
    finally:
        sweep()
    stats = summarize(result["samples"])
    print(f"n={args.n} warmup={args.warmup} image={args.image} ({time.perf_counter() - started:.0f}s)")
    verdicts = report(stats)
    for what, err in result["errors"].items():
        print(f"  {what} failed: {err}")

    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "n": args.n,
        "warmup": args.warmup,
        "image": args.image,
        "run_id": RUN_ID,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": platform.python_version(),
        "docker_py": docker.__version__,
        "engine": impls[1].client.version().get("Version"),
        "peer_installed": len(impls) > 2,
    }
    ratios = {op: {side: ratio(stats, op, side) for side in ("raw", "cli")} for op in OPS}
    RESULTS.write_text(
        json.dumps(
            {**meta, "results": stats, "ratios": ratios, "targets": verdicts, "errors": result["errors"]},
            indent=2,
        )
    )
    print(f"\nsaved {RESULTS}")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit("interrupted; the benchmark's containers were removed")
