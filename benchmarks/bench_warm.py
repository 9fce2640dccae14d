"""Benchmark shared warm pools on docker: a fresh process's first command, and claims at scale.

(a) First command from a fresh process, each rep a new ``python``: the time from ``from praisonai
    import Sandbox`` finishing to the first command's result, for

    * claim: ``Sandbox.create("docker")`` takes a warm instance of a pool of 1 (``praisonai
      compute warm``), refilled by the claim's own detached refill before the next rep;
    * cold: the same process shape with a definition no pool has (a label), so it provisions;
    * raw: docker-py from ``import docker`` finishing: ``from_env``, ``containers.run`` detached,
      ``exec_run("true")`` (the floor without a pool).

    Import times are printed beside them. Target: claim <= 50 ms.
(b) ``--claims`` claims (default 100) across ``--processes`` processes (default 10) let go at once
    against a pool of as many: claims/s, instances handed out twice (target 0) and leaks once
    every claimer shut its instances down (containers or ledger rows left: target 0). The pool's
    recorded size is dropped once filled, so no refill runs during (b): it measures claims alone.

Everything runs in a throwaway PRAISONAI_HOME; every container it makes is removed at the end.
Results JSON: benchmarks/results/bench_warm.json.

    python3 benchmarks/bench_warm.py [--reps 10] [--claims 100] [--processes 10]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from _common import RESULTS_DIR, save
from kit import stop_home, wait_for_refills
from leftovers import remove_leftovers

ROOT = Path(__file__).resolve().parent.parent
TARGET_MS = 50.0

# One rep of (a): prints {"import_ms", "first_ms", "id"}; the instance is shut down after timing.
_FIRST = """
import json, sys, time
t0 = time.perf_counter()
from praisonai import Sandbox
t_imported = time.perf_counter()
from praisonai.compute import warm  # loaded by the line above: only the claim's share is timed apart
claim, spent = warm.claim, []
async def timed_claim(*args, **kwargs):
    start = time.perf_counter()
    try:
        return await claim(*args, **kwargs)
    finally:
        spent.append(time.perf_counter() - start)
warm.claim = timed_claim
t1 = time.perf_counter()  # the wrapper's set-up is in neither figure
labels = {"bench": "cold"} if sys.argv[1] == "cold" else {}
sb = Sandbox.create("docker", environment=False, labels=labels)
sb.exec("true", check=True)
t2 = time.perf_counter()
sb.close()
out = {"import_ms": (t_imported - t0) * 1e3, "first_ms": (t2 - t1) * 1e3, "claim_ms": sum(spent) * 1e3}
print(json.dumps(out))
"""
_RAW = """
import json, sys, time
t0 = time.perf_counter()
import docker
t1 = time.perf_counter()
client = docker.from_env()
labels = {"praisonai.home": sys.argv[2]}  # so that the clean-up finds it, whatever happens
c = client.containers.run(sys.argv[1], ["sleep", "infinity"], detach=True, labels=labels)
c.exec_run("true")
t2 = time.perf_counter()
c.remove(force=True)
print(json.dumps({"import_ms": (t1 - t0) * 1e3, "first_ms": (t2 - t1) * 1e3, "claim_ms": 0.0}))
"""
# One claimer of (b): waits for the file "go", claims, prints its ids and when it was done.
_CLAIMER = """
import json, sys, time, anyio
from pathlib import Path
from praisonai.compute.config import ComputeConfig
from praisonai.compute.providers.docker import DockerCompute
from praisonai.compute.warm import claim
folder, rounds = Path(sys.argv[1]), int(sys.argv[2])
provider, config = DockerCompute(), ComputeConfig()
(folder / f"ready-{sys.argv[3]}").touch()
while not (folder / "go").exists():
    time.sleep(0.0005)

async def main():
    got = []
    for _ in range(rounds):
        info = await claim(provider, config)
        got.append(info.instance_id if info else None)
    done = time.time()
    for instance_id in filter(None, got):
        await provider.shutdown(instance_id)
    return got, done

got, done = anyio.run(main)
print(json.dumps({"ids": got, "done": done}))
"""


def child(code: str, *args: str) -> dict[str, Any]:
    r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise SystemExit(f"a benchmark child failed: {r.stderr.strip()[-2000:]}")
    return dict(json.loads(r.stdout.strip().splitlines()[-1]))


def fill(size: int) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "praisonai", "compute", "warm", "--size", str(size), "-c", "docker"],
        capture_output=True, text=True, timeout=600, cwd=os.environ["PRAISONAI_HOME"],
    )  # fmt: skip
    if r.returncode != 0:
        raise SystemExit(f"compute warm failed: {r.stderr.strip()}")


def first_command(reps: int, home_label: str) -> dict[str, dict[str, list[float]]]:
    """(a): reps take turns across the sides; the pool is refilled (by the claim) between reps."""
    from praisonai.compute.providers.docker import DEFAULT_IMAGE

    fill(1)
    sides: dict[str, dict[str, list[float]]] = {
        s: {"import_ms": [], "first_ms": [], "claim_ms": []} for s in ("claim", "cold", "raw")
    }
    for _ in range(reps):
        for side in sides:
            wait_for_refills(Path(os.environ["PRAISONAI_HOME"]))
            out = child(_RAW, DEFAULT_IMAGE, home_label) if side == "raw" else child(_FIRST, side)
            for key, samples in sides[side].items():
                samples.append(out[key])
    return sides


def claims_at_scale(claims: int, processes: int, home: Path) -> dict[str, Any]:
    """(b): a pool of ``claims`` instances, ``processes`` claimers let go at once."""
    from praisonai._ledger import Ledger

    fill(claims)
    Ledger.default().execute("DELETE FROM warm_pools")  # no refill: (b) measures the claims alone
    barrier = home / "barrier"
    barrier.mkdir()
    rounds = -(-claims // processes)
    argv = [sys.executable, "-c", _CLAIMER, str(barrier), str(rounds)]
    children = [
        subprocess.Popen([*argv, str(i)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for i in range(processes)
    ]
    while len(list(barrier.glob("ready-*"))) < processes:
        time.sleep(0.01)
    start = time.time()
    (barrier / "go").touch()
    outs = [json.loads(c.communicate(timeout=600)[0].strip().splitlines()[-1]) for c in children]
    ids = [i for out in outs for i in out["ids"] if i]
    elapsed = max(out["done"] for out in outs) - start
    stop_home(home)  # what no claimer got (none when every claim found one)
    left = remove_leftovers(home, set())  # containers, and ledger rows (reported, not removed)
    return {
        "claims": len(ids),
        "attempts": rounds * processes,
        "claims_per_s": len(ids) / elapsed if elapsed > 0 else 0.0,
        "handed_out_twice": len(ids) - len(set(ids)),
        "leaks": sum(len(v) for v in left.values()),
        "leaked": left,
    }


def clean(home: Path) -> None:
    """Stop what (a) left warm (its rows go too), then remove anything labelled with the home."""
    wait_for_refills(home)
    stop_home(home)
    remove_leftovers(home, set())


def report(sides: dict[str, dict[str, list[float]]], scale: dict[str, Any]) -> list[str]:
    med = {s: statistics.median(v["first_ms"]) for s, v in sides.items()}
    imp = {s: statistics.median(v["import_ms"]) for s, v in sides.items()}
    took = {s: statistics.median(v["claim_ms"]) for s, v in sides.items()}
    lines = [f"{'side':<6} {'import p50':>11} {'first command p50':>18} {'of which warm.claim':>20}  (ms)"]
    lines += [f"{s:<6} {imp[s]:>11.1f} {med[s]:>18.1f} {took[s]:>20.1f}" for s in sides]
    verdict = "PASS" if med["claim"] <= TARGET_MS else "MISS"
    ratios = f"claim / raw docker-py: {med['claim'] / med['raw']:.2f}x"
    ratios += f"; claim / cold: {med['claim'] / med['cold']:.2f}x"
    lines.append(f"{ratios}; claim {med['claim']:.1f} ms (target <= {TARGET_MS:g} ms: {verdict})")
    twice, leaks = scale["handed_out_twice"], scale["leaks"]
    got = f"{scale['claims']}/{scale['attempts']} claims across processes"
    lines.append(
        f"{got}: {scale['claims_per_s']:.1f} claims/s; "
        f"handed out twice: {twice} ({'PASS' if twice == 0 else 'MISS'}); "
        f"leaks: {leaks} ({'PASS' if leaks == 0 else 'MISS'})"
    )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=10, help="fresh processes per side in (a)")
    parser.add_argument("--claims", type=int, default=100, help="claims in (b), and the pool's size")
    parser.add_argument("--processes", type=int, default=10, help="claiming processes in (b)")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="praisonai-bench-warm-"))
    os.environ["PRAISONAI_HOME"] = str(home)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    from praisonai._ledger import home_tag

    try:
        sides = first_command(args.reps, home_tag(home))
        clean(home)
        scale = claims_at_scale(args.claims, args.processes, home)
    finally:
        clean(home)
        shutil.rmtree(home, ignore_errors=True)
    lines = report(sides, scale)
    print("\n".join(lines))
    save(
        RESULTS_DIR / "bench_warm.json",
        {"args": vars(args)},
        {"first_command": sides, "scale": scale, "report": lines},
    )


if __name__ == "__main__":
    main()
