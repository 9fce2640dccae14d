"""How the docker provider scales: N instances live at once, on one engine and on a pool of
engines, under runc and runsc (gVisor); ours next to raw docker-py doing the same work in the
same run (the floor).

For each configuration ({one engine, the pool} x {runc, runsc}) and each N in ``--sizes`` (a
configuration stops growing at the first N whose error rate is above 1%), ours then raw:

* provision to first exec: N instances made concurrently, at most ``--concurrency`` at a time;
  ready = the first ``execute("true")`` answered (ours: ``provision()``, with the runsc kernel
  check, then the helper's first exec; raw: create + start + ``exec_run true``). Rate = N / the
  wall time until the last is ready; time-to-ready p50/p95/p99 per instance;
* exec ``true`` with all N live: rounds over every instance (at least ``--execs`` samples), from
  ``--callers`` concurrent callers, p50/p99;
* host memory per idle instance: 2 s after the exec rounds, the PSS of each instance's containerd
  shim and every process under it (as ``bench_runtime.py``), median;
* teardown rate: N removals, ``--concurrency`` at a time; leaks: containers of this run still on
  any engine afterwards (must be 0; the sweep then removes them);
* with ``--warm``, ours from a ``WarmPool`` already holding N (filled untimed): claims to first
  exec per second, the path that does not wait for ``docker start``.

Same image everywhere so that one engine and the pool compare: the pool engines'
``praisonai-pool-test:busybox`` (``.ci/dockerd-pool.sh up DIR 3 busybox``), copied into the
main engine when missing. Both sides run ``network: none`` (the one policy both runsc
registrations honour). Raw containers get ours' hardening (docker-init, the same 8 capabilities,
no-new-privileges, pids/cpu/memory limits) and idle in ``sleep``; raw on the pool places round-robin.
The pool is the engines of ``--pool`` (default ``$PRAISONAI_TEST_DOCKERD_POOL``); a pool
configuration is skipped when it has no engines, a runsc one when an engine lacks runsc. Give it
engines no test is using (tests/providers/test_docker_pool.py kills and restarts one of its
engines): ``.ci/dockerd-pool.sh up /tmp/pxbench 3 busybox``, then ``--pool /tmp/pxbench`` (and
``down /tmp/pxbench`` after).
Every container carries this run's label and is removed at the end, even on error or Ctrl-C.
Results JSON: benchmarks/results/bench_scale.json.

    python3 benchmarks/bench_scale.py [--sizes 1,10,50,100,200] [--quick] [--pool DIR] [--configs …]
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import docker

sys.path.insert(0, str(Path(__file__).parent))
from _common import RESULTS_DIR, idle_pss_mib, save
from _scale_report import CONFIGS, table, targets

from praisonai.compute.providers.docker import DockerCompute, container_name
from praisonai.compute.warm import WarmPool

IMAGE = "praisonai-pool-test:busybox"
RUN_ID = uuid.uuid4().hex[:12]
LABELS = {"praisonai.bench": "1", "praisonai.bench.run": RUN_ID}
CAPS = ["CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID", "NET_BIND_SERVICE"]


def pct(xs: list[float], q: float) -> float:
    ordered = sorted(xs)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)] if xs else math.nan


def spread(xs: list[float]) -> dict[str, float]:
    return {"p50": pct(xs, 0.5), "p95": pct(xs, 0.95), "p99": pct(xs, 0.99)}


def ms_since(start: float) -> float:
    return (time.perf_counter() - start) * 1000


class Ours:
    """``DockerCompute`` on one engine or a pool; ids are instance ids."""

    name = "ours"

    def __init__(self, hosts: list[str], runtime: str) -> None:
        where: dict[str, Any] = {"hosts": hosts} if len(hosts) > 1 else {"base_url": hosts[0] or None}
        self.p = DockerCompute(image=IMAGE, pull=False, runtime=runtime, **where)
        self.cfg = {"network": "none", "labels": LABELS}
        self.engines = engines(hosts)

    async def ready(self) -> str:
        iid = (await self.p.provision(self.cfg)).instance_id
        await self.exec(iid)
        return iid

    async def exec(self, iid: str) -> None:
        result = await self.p.execute(iid, "true")
        if result.exit_code != 0:
            raise RuntimeError(f"true exited {result.exit_code}")

    async def remove(self, iid: str) -> None:
        await self.p.shutdown(iid)

    def container_ids(self, ids: list[str]) -> list[str]:
        names = {f"/{container_name(i)}" for i in ids}
        return [row["Id"] for row in our_rows(self.engines) if set(row["Names"]) & names]


class Raw:
    """docker-py's low-level client, one per engine, round-robin; ids are container ids."""

    name = "raw"

    def __init__(self, hosts: list[str], runtime: str) -> None:
        self.engines = engines(hosts)
        self.runtime, self.turn, self.where = runtime, 0, {}  # type: ignore[var-annotated]

    async def ready(self) -> str:
        api = self.engines[self.turn % len(self.engines)]
        self.turn += 1
        host_config = api.create_host_config(
            init=True, cap_drop=["ALL"], cap_add=CAPS, security_opt=["no-new-privileges:true"],
            pids_limit=4096, nano_cpus=int(1e9), mem_limit="1024m", network_mode="none",
            runtime=self.runtime,
        )  # fmt: skip
        create = lambda: api.create_container(  # noqa: E731
            IMAGE, command=["sleep", "2147483647"], labels=LABELS, host_config=host_config, detach=True
        )
        cid = str((await anyio.to_thread.run_sync(create))["Id"])
        self.where[cid] = api
        await anyio.to_thread.run_sync(api.start, cid)
        await self.exec(cid)
        return cid

    async def exec(self, cid: str) -> None:
        api = self.where[cid]

        def run() -> None:
            exec_id = api.exec_create(cid, ["true"])["Id"]
            api.exec_start(exec_id)
            if api.exec_inspect(exec_id)["ExitCode"] != 0:
                raise RuntimeError("true failed")

        await anyio.to_thread.run_sync(run)

    async def remove(self, cid: str) -> None:
        await anyio.to_thread.run_sync(lambda: self.where.pop(cid).remove_container(cid, force=True))

    def container_ids(self, ids: list[str]) -> list[str]:
        return ids


def engines(hosts: list[str]) -> list[Any]:
    """A client per engine ("" is the machine's: ``$DOCKER_HOST``, else its socket)."""
    return [
        docker.APIClient(base_url=h, max_pool_size=64) if h else docker.from_env(max_pool_size=64).api
        for h in hosts
    ]


def our_rows(apis: list[Any]) -> list[dict[str, Any]]:
    """Every container of this run on these engines (all states)."""
    rows: list[dict[str, Any]] = []
    for api in apis:
        rows += api.containers(all=True, filters={"label": f"praisonai.bench.run={RUN_ID}"})
    return rows


async def each(ids: list[Any], fn: Callable[[Any], Awaitable[Any]], limit: int) -> tuple[float, list[Any]]:
    """``fn(x)`` for every x, ``limit`` at a time: (wall seconds, [(x, ms, result or exception)])."""
    out: list[Any] = []
    gate = anyio.Semaphore(limit)

    async def one(x: Any) -> None:
        async with gate:
            start = time.perf_counter()
            try:
                value = await fn(x)
            except Exception as exc:  # counted as this item's error
                value = exc
            out.append((x, ms_since(start), value))

    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for x in ids:
            tg.start_soon(one, x)
    return time.perf_counter() - start, out


async def measure(side: Any, n: int, args: argparse.Namespace, live: list[str]) -> dict[str, Any]:
    """One side at one N: provision, exec rounds, idle memory, teardown. ``live`` holds what exists."""
    wall, made = await each(list(range(n)), lambda _: side.ready(), args.concurrency)
    errors = [repr(r) for _, _, r in made if isinstance(r, Exception)]
    ids = [r for _, _, r in made if not isinstance(r, Exception)]
    live += ids
    ready_ms = [ms for _, ms, r in made if not isinstance(r, Exception)]
    result: dict[str, Any] = {
        "n": n,
        "errors": len(errors),
        "error_samples": errors[:3],
        "provision_per_s": len(ids) / wall,
        "ready_ms": spread(ready_ms),
    }
    rounds = max(3, math.ceil(args.execs / max(1, len(ids))))
    _, execs = await each(ids * rounds, side.exec, args.callers)
    exec_ms = [ms for _, ms, r in execs if not isinstance(r, Exception)]
    result["exec_errors"] = len(execs) - len(exec_ms)
    result["exec_ms"] = spread(exec_ms)
    await anyio.sleep(2)  # idle: the helpers' start-up work is done
    memory = await anyio.to_thread.run_sync(lambda: idle_pss_mib(side.container_ids(ids)))
    result["idle_pss_mib"] = statistics.median(memory) if memory else math.nan
    wall, gone = await each(ids, side.remove, args.concurrency)
    for iid, _, r in gone:
        if not isinstance(r, Exception):
            live.remove(iid)
    result["teardown_per_s"] = len(ids) / wall
    result["errors"] += sum(isinstance(r, Exception) for _, _, r in gone)
    result["leaked"] = len(await anyio.to_thread.run_sync(our_rows, side.engines))
    return result


async def warm_claims(hosts: list[str], runtime: str, n: int, args: argparse.Namespace) -> dict[str, Any]:
    """Ours from a ``WarmPool`` already holding N (filled before the clock starts): N claims and
    their first exec, ``--concurrency`` at a time. The pool stops refilling before the teardown."""
    ours = Ours(hosts, runtime)
    ids: list[str] = []

    async def claim(_: int) -> str:
        iid = (await pool.claim()).instance_id
        ids.append(iid)
        await ours.exec(iid)
        return iid

    try:
        async with WarmPool(ours.p, ours.cfg, size=n) as pool:
            wall, made = await each(list(range(n)), claim, args.concurrency)
        ready_ms = [ms for _, ms, r in made if not isinstance(r, Exception)]
        return {
            "claim_per_s": len(ready_ms) / wall,
            "ready_ms": spread(ready_ms),
            "errors": n - len(ready_ms),
        }
    finally:
        with anyio.CancelScope(shield=True):
            await each(ids, ours.remove, args.concurrency)


async def run_config(name: str, hosts: list[str], args: argparse.Namespace) -> list[dict[str, Any]]:
    runtime = name.split("-")[1]
    sides: list[Any] = [Ours(hosts, runtime), Raw(hosts, runtime)]
    rows: list[dict[str, Any]] = []
    for i, n in enumerate(args.sizes):
        row: dict[str, Any] = {"n": n}
        for side in sides if i % 2 == 0 else sides[::-1]:  # who goes first alternates
            live: list[str] = []
            try:
                row[side.name] = await measure(side, n, args, live)
            finally:
                with anyio.CancelScope(shield=True):
                    await each(list(live), side.remove, args.concurrency)
                    await anyio.to_thread.run_sync(sweep, side.engines)
            print(f"  {name} N={n} {side.name}: {brief(row[side.name])}", flush=True)
        if args.warm:
            try:
                row["warm"] = warm = await warm_claims(hosts, runtime, n, args)
            finally:
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(sweep, sides[0].engines)
            print(f"  {name} N={n} warm: {warm['claim_per_s']:.1f}/s claimed to first exec, ready p50 "
                  f"{warm['ready_ms']['p50']:.0f} ms, errors {warm['errors']}", flush=True)  # fmt: skip
        rows.append(row)
        if row["ours"]["errors"] > 0.01 * n:
            print(f"  {name}: error rate above 1% at N={n}; not growing further")
            break
    return rows


def brief(r: dict[str, Any]) -> str:
    return (
        f"{r['provision_per_s']:.1f}/s ready p50 {r['ready_ms']['p50']:.0f} ms, exec p99 "
        f"{r['exec_ms']['p99']:.1f} ms, {r['idle_pss_mib']:.1f} MiB, teardown {r['teardown_per_s']:.1f}/s, "
        f"errors {r['errors']}, leaked {r['leaked']}"
    )


def sweep(apis: list[Any]) -> None:
    """Remove every container of this run on these engines (the last resort after a failure)."""
    for api in apis:
        for row in api.containers(all=True, filters={"label": f"praisonai.bench.run={RUN_ID}"}):
            try:
                api.remove_container(row["Id"], force=True)
            except docker.errors.APIError as exc:  # 404/409: gone, or being removed already
                if exc.status_code not in (404, 409):
                    print(f"sweep: {row['Id'][:12]}: {exc}", file=sys.stderr)


def hosts_of(config: str, pool: list[str]) -> tuple[list[str], str | None]:
    """The engines of ``config`` and why it cannot run here (``None``: it can)."""
    hosts = pool if config.startswith("pool") else [""]
    if not hosts:
        return hosts, "no pool engines (start them: .ci/dockerd-pool.sh up DIR 3 busybox; --pool DIR)"
    if config.endswith("runsc"):
        missing = [h or "the main engine" for h, api in zip(hosts, engines(hosts), strict=True)
                   if "runsc" not in (api.info().get("Runtimes") or {})]  # fmt: skip
        if missing:
            return hosts, f"no runsc registered on {', '.join(missing)}"
    return hosts, None


def ensure_image(pool: list[str]) -> None:
    """The pool's busybox image on the main engine too (copied from the first pool engine)."""
    main_api = engines([""])[0]
    try:
        main_api.inspect_image(IMAGE)
        return
    except docker.errors.ImageNotFound:
        if not pool:
            sys.exit(f"{IMAGE} is on no engine: start the pool with .ci/dockerd-pool.sh up DIR 3 busybox")
    print(f"copying {IMAGE} into the main engine")
    main_api.load_image(b"".join(engines(pool[:1])[0].get_image(IMAGE)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,10,50,100,200", help="N values, comma-separated")
    parser.add_argument("--quick", action="store_true", help="sizes 1,10 and fewer execs (~2 min here)")
    parser.add_argument("--configs", default=",".join(CONFIGS), help=f"of {', '.join(CONFIGS)}")
    parser.add_argument("--concurrency", type=int, default=8, help="provisions/removals at a time")
    parser.add_argument("--callers", type=int, default=4, help="concurrent exec callers")
    parser.add_argument("--execs", type=int, default=200, help="at least this many exec samples per N")
    parser.add_argument("--warm", action="store_true", help="also claim N from a WarmPool holding N")
    parser.add_argument(
        "--pool", default=os.environ.get("PRAISONAI_TEST_DOCKERD_POOL", "/tmp/praisonai-ci-pool")
    )
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.execs = "1,10", 50
    args.sizes = [int(n) for n in args.sizes.split(",")]
    pool = [f"unix://{s}" for s in sorted(Path(args.pool).glob("d*/docker.sock"))]
    ensure_image(pool)
    results: dict[str, Any] = {}
    started = time.perf_counter()
    try:
        for config in args.configs.split(","):
            hosts, why_not = hosts_of(config, pool)
            if why_not:
                print(f"{config}: skipped, {why_not}")
                results[config] = why_not
                continue
            print(f"{config} on {len(hosts)} engine(s)", flush=True)
            results[config] = anyio.run(run_config, config, hosts, args)
    finally:
        sweep(engines(["", *pool]))
        time.sleep(1)  # after Ctrl-C, a create still in flight in a worker thread may land late
        sweep(engines(["", *pool]))
    print(
        f"\n{time.perf_counter() - started:.0f}s; image {IMAGE}, "
        f"concurrency {args.concurrency}, callers {args.callers}"
    )
    table(results)
    verdicts = targets(results)
    meta = {"run_id": RUN_ID, "image": IMAGE, "pool": pool, "docker_py": docker.__version__,
            **{k: v for k, v in vars(args).items() if k != "pool"}}  # fmt: skip
    save(RESULTS_DIR / "bench_scale.json", meta, {"configs": results, "targets": verdicts})


def interrupted(*_: Any) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    # Ctrl-C and kill both end the run through its clean-up (a background job of a
    # non-interactive shell starts with SIGINT ignored, so it is set again).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, interrupted)
    try:
        main()
    except KeyboardInterrupt:
        sys.exit("interrupted; the benchmark's containers were removed")
