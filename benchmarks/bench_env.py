"""Benchmark provisioning from captures and warm pools on docker, side by side in one run.

Measured (p50/p95 in ms, reps take turns across sides):

* plain: ``DockerCompute.provision()`` of the default image, no setup (the baseline the capture
  target is measured against); raw: docker-py ``create_container`` + ``start`` with the same
  settings (the floor).
* capture: ``provision`` of a definition whose setup takes ``--setup-s`` seconds, once its capture
  exists (so it starts from the capture; the definition has no refresh).
* build: the first provision of a fresh definition (setup runs, then the capture is made); the
  setup time a capture saves is build - capture.
* warm: ``WarmPool.claim(env=...)`` from a full pool (env bound after the claim).
* peer: ``praisonai-sandbox``'s ``DockerCompute.provision`` of the same plain and setup
  definitions (its own capture flow), when installed.

Targets: capture <= 1.2x plain; warm claim <= 10 ms. Every container and capture it makes is
removed at the end. Results JSON: benchmarks/results/bench_env.json.

    python3 benchmarks/bench_env.py [--n 15] [--setup-s 2]
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).parent))
from _common import RESULTS_DIR, save, summary, timed

from praisonai.compute.config import ComputeConfig
from praisonai.compute.providers.docker import DEFAULT_IMAGE, DockerCompute
from praisonai.compute.warm import WarmPool

HAVE_PEER = importlib.util.find_spec("praisonai_sandbox") is not None
RUN = uuid.uuid4().hex[:8]


async def bench(args: argparse.Namespace) -> tuple[dict[str, dict[str, list[float]]], list[str]]:
    provider = DockerCompute()
    started = int(time.time()) - 1
    made: list[str] = []
    samples: dict[str, dict[str, list[float]]] = {}
    notes: list[str] = []
    setup = {"setup": [f"sleep {args.setup_s}", f"echo {RUN} > /opt/ready"]}

    def record(op: str, side: str, ms: float) -> None:
        samples.setdefault(op, {}).setdefault(side, []).append(ms)

    async def provision(config: object) -> None:
        made.append((await provider.provision(config)).instance_id)

    try:
        for rep in range(args.n_build):  # fresh definitions: setup runs, then the capture is made
            ms, _ = await timed(lambda r=rep: provision({"setup": [*setup["setup"], f"echo {r}"]}))
            record("build", "ours", ms)
        await provision(setup)  # make the capture the "capture" side starts from
        sides: dict[str, Callable[[], Awaitable[Any]]] = {
            "plain": lambda: provision(None),
            "capture": lambda: provision(setup),
            "raw": lambda: anyio.to_thread.run_sync(raw_create, provider, made),
        }
        if HAVE_PEER:
            sides.update(await peer_sides(setup, made, notes))
        for rep in range(args.warmup + args.n):
            for side, call in sides.items():
                ms, _ = await timed(call)
                if rep >= args.warmup:
                    record("provision", side, ms)
                await cleanup(provider, made)
        async with WarmPool(provider, setup, size=1) as pool:
            for rep in range(args.warmup + args.n):
                await pool.wait_ready()
                ms, info = await timed(lambda: pool.claim(env={"TOKEN": "t"}))
                made.append(info.instance_id)
                if rep >= args.warmup:
                    record("warm", "ours", ms)
                await cleanup(provider, made)
    finally:
        await cleanup(provider, made)
        tags = [ComputeConfig.coerce(d).capture_tag() for d in [setup]]
        tags += [ComputeConfig.coerce({"setup": [*setup["setup"], f"echo {r}"]}).capture_tag()
                 for r in range(args.n_build)]  # fmt: skip
        subprocess.run(
            ["docker", "rmi", "-f", *[f"praisonai-capture:{t}" for t in tags]], capture_output=True
        )
        if HAVE_PEER:  # the peer's captures (praisonai-env:<its key>) made during this run
            peer = provider.api.images(name="praisonai-env")
            made_now = [i["Id"] for i in peer if i.get("Created", 0) >= started]
            subprocess.run(["docker", "rmi", "-f", *made_now], capture_output=True)
    return samples, notes


def raw_create(provider: DockerCompute, made: list[str]) -> None:
    """docker-py's floor: create + start with our container settings (removed by cleanup)."""
    api = provider.api
    name = f"praisonai_bench_{uuid.uuid4().hex[:12]}"
    host = api.create_host_config(init=True, cap_drop=["ALL"], security_opt=["no-new-privileges:true"],
                                  pids_limit=4096, nano_cpus=10**9, mem_limit="1024m")  # fmt: skip
    api.create_container(DEFAULT_IMAGE, command=["sleep", "infinity"], name=name, host_config=host,
                         labels={"praisonai.bench": RUN}, detach=True)  # fmt: skip
    api.start(name)
    made.append(f"raw:{name}")


async def cleanup(provider: DockerCompute, made: list[str]) -> None:
    while made:
        instance_id = made.pop()
        if instance_id.startswith("raw:"):
            await anyio.to_thread.run_sync(
                lambda n=instance_id[4:]: provider.api.remove_container(n, force=True)
            )
        elif instance_id.startswith("peer:"):
            await anyio.to_thread.run_sync(
                lambda n=instance_id[5:]: subprocess.run(["docker", "rm", "-f", n], capture_output=True)
            )
        else:
            await provider.shutdown(instance_id)


async def peer_sides(
    setup: dict[str, Any], made: list[str], notes: list[str]
) -> dict[str, Callable[[], Awaitable[Any]]]:
    from praisonai_sandbox.compute.docker import DockerCompute as PeerDocker  # type: ignore
    from praisonaiagents.managed import ComputeConfig as PeerConfig  # type: ignore

    peer = PeerDocker()

    async def provision(**fields: Any) -> None:
        info = await peer.provision(PeerConfig(image=DEFAULT_IMAGE, **fields))
        made.append(f"peer:{info.endpoint.rsplit('/', 1)[-1] or info.instance_id}")

    try:
        await provision(setup=setup["setup"])  # its capture, made once
    except Exception as exc:  # report, do not hide: the column then says why
        notes.append(f"peer setup provision failed: {exc}")
        return {}
    notes.append("peer captures go to ~/.praisonai/environments (it ignores PRAISONAI_HOME); "
                 "its praisonai-env:* images are removed by the cleanup")  # fmt: skip
    return {"peer plain": lambda: provision(), "peer capture": lambda: provision(setup=setup["setup"])}


def report(samples: dict[str, dict[str, list[float]]], notes: list[str]) -> tuple[dict[str, Any], list[str]]:
    stats = {op: {side: summary(xs) for side, xs in sides.items()} for op, sides in samples.items()}
    p50 = {f"{op}/{side}": s["p50"] for op, sides in stats.items() for side, s in sides.items()}
    lines = ["| measure | p50 ms | p95 ms |", "|---|---:|---:|"]
    for op, sides in stats.items():
        for side, s in sides.items():
            lines.append(f"| {op} {side} | {s['p50']:.1f} | {s['p95']:.1f} |")
    ratio = p50["provision/capture"] / p50["provision/plain"]
    saved = p50["build/ours"] - p50["provision/capture"]
    warm = p50["warm/ours"]
    lines += [
        "",
        f"capture / plain: {ratio:.2f}x (target <= 1.2x: {'PASS' if ratio <= 1.2 else 'FAIL'}); "
        f"plain / raw docker-py: {p50['provision/plain'] / p50['provision/raw']:.2f}x",
        f"warm claim: {warm:.1f} ms (target <= 10 ms: {'PASS' if warm <= 10 else 'FAIL'})",
        f"setup time saved by the capture: {saved:.0f} ms per provision (build {p50['build/ours']:.0f} ms)",
        *(f"note: {n}" for n in notes),
    ]
    if "provision/peer capture" in p50:
        lines.append(
            f"peer capture / ours capture: {p50['provision/peer capture'] / p50['provision/capture']:.2f}x"
        )
    return {"stats": stats, "capture_over_plain": ratio, "saved_ms": saved}, lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=15, help="timed reps per side (15)")
    parser.add_argument("--n-build", type=int, default=3, help="fresh definitions built (3)")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--setup-s", type=float, default=2.0, help="seconds the setup takes (2)")
    parser.add_argument("--json", type=Path, default=RESULTS_DIR / "bench_env.json")
    args = parser.parse_args()
    samples, notes = anyio.run(bench, args)
    results, lines = report(samples, notes)
    print("\n".join(lines))
    save(args.json, {"n": args.n, "setup_s": args.setup_s, "peer_installed": HAVE_PEER}, results)


if __name__ == "__main__":
    main()
