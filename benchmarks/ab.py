"""Before/after: run one benchmark script of two revisions in alternating rounds, in one run.

    python benchmarks/ab.py REV bench_exec.py [--rounds 3] [-- script args...]

Checks out ``REV`` (a commit, tag or branch) into a temporary git worktree, then runs
``benchmarks/<script>`` of that tree and of this one in turn — before, after, after, before, … —
each with its own code on ``PYTHONPATH``. The machine is noisy, so each side's number is the
median over rounds of the script's own median for that op; the table shows both and after/before.
Only our side of each op ("ours") is compared: the raw SDK floor is the same code either way.
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
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# Where each script saves its results, relative to the tree it ran from.
SAVED = {
    "bench_exec.py": "benchmarks/results/bench_exec.json",
    "bench_docker.py": "benchmarks/results/bench_docker.json",
}


def ours_by_op(saved: dict[str, Any]) -> dict[str, float]:
    """{op: our median} from a saved results file (bench_exec: ms or cmd/s; bench_docker: ms)."""
    results = saved["results"]
    if "ours" in results and isinstance(results["ours"], dict):  # bench_docker: impl -> op -> stats
        return {op: s["median_ms"] for op, s in results["ours"].items()}
    out = {}
    for op, sides in results.items():  # bench_exec: op -> side -> stats
        ours = sides.get("ours") if isinstance(sides, dict) else None
        if isinstance(ours, dict):
            out[op] = ours.get("rate", ours.get("p50"))
    return out


def run_once(tree: Path, script: str, args: list[str]) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    subprocess.run([sys.executable, str(tree / "benchmarks" / script), *args], env=env, cwd=tree,
                   check=True, stdout=subprocess.DEVNULL)  # fmt: skip
    return ours_by_op(json.loads((tree / SAVED[script]).read_text()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", help="the revision to compare against (e.g. main~5, a commit)")
    parser.add_argument("script", choices=sorted(SAVED))
    parser.add_argument("--rounds", type=int, default=3, help="runs of each side (3)")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)  # after --: the script's own arguments
    opts, script_args = parser.parse_args(argv[:cut]), argv[cut + 1 :]
    scratch = Path(tempfile.mkdtemp(prefix="praisonai-ab-"))
    before = scratch / "before"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(before), opts.before],
                   check=True)  # fmt: skip
    runs: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    try:
        for rnd in range(opts.rounds):
            order = ["before", "after"] if rnd % 2 == 0 else ["after", "before"]
            for side in order:
                tree = before if side == "before" else ROOT
                runs[side].append(run_once(tree, opts.script, script_args))
                print(f"round {rnd + 1}/{opts.rounds}: {side} done", file=sys.stderr)
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(before)], check=False)
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"\n{opts.script}: before = {opts.before}, after = this tree; median of {opts.rounds} runs each")
    print("| op | before | after | after/before |\n|---|---:|---:|---:|")
    for op in runs["after"][0]:
        b = statistics.median(r[op] for r in runs["before"] if op in r)
        a = statistics.median(r[op] for r in runs["after"] if op in r)
        print(f"| {op} | {b:.2f} | {a:.2f} | {a / b:.2f}x |")


if __name__ == "__main__":
    main()
