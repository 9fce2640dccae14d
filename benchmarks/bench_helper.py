"""Where a docker request's time goes inside the instance: each request of the exec helper timed
from in there, as root, against the helper scripts of this tree and of an older revision, side by
side in one run.

The host client, the engine and the attach are left out: a driver (``_helper_driver.py``) runs in
one instance of the sandbox image, started as ours are (docker-init, the capabilities, the command
uid), starts one helper per script as a docker channel does (root, commands as uid 1000) and times
each request until its reply, and an exec until its end notice, rep by rep across the scripts.
``exec true`` as the helper's own uid (``privileged=True``) is the cost without separation; the
client adds about 1 ms to every request over this (bench_exec.py times the whole path).

    python3 benchmarks/bench_helper.py [--before REV] [--reps 200]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).parent))
from _common import RESULTS_DIR, save

from praisonai.compute.providers.docker import DockerCompute
from praisonai.runtime.channel import HELPER

ROOT = Path(__file__).resolve().parent.parent
DRIVER = Path(__file__).parent / "_helper_driver.py"


def helper_of(revision: str) -> str:
    """The helper script of ``revision``, joined as runtime/channel.py joins it."""
    parts = []
    for name in ("helper_files.sh", "helper.sh"):
        shown = subprocess.run(["git", "-C", str(ROOT), "show", f"{revision}:praisonai/runtime/{name}"],
                               capture_output=True, text=True, check=False)  # fmt: skip
        if shown.returncode == 0:  # helper_files.sh came later
            parts.append(shown.stdout)
    if not parts:
        sys.exit(f"{revision} has no praisonai/runtime/helper.sh")
    return "\n".join(parts)


async def bench(scripts: dict[str, str], reps: int) -> dict[str, list[float]]:
    provider = DockerCompute()
    iid = (await provider.provision({"labels": {"praisonai.bench": "1"}})).instance_id
    try:
        paths = []
        for name, text in scripts.items():
            paths.append(f"/tmp/bench-helper-{name}.sh")
            await provider.write_file(iid, paths[-1], text.encode())
        await provider.write_file(iid, "/tmp/bench-driver.py", DRIVER.read_bytes())
        ran = await provider.execute(
            iid, f"python3 /tmp/bench-driver.py {reps} {' '.join(paths)}", privileged=True, timeout=3600
        )
        if ran.exit_code != 0:
            sys.exit(f"the driver failed ({ran.exit_code}): {ran.stderr[-2000:]}")
        return dict(json.loads(ran.stdout))
    finally:
        await provider.shutdown(iid)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="a revision whose helper is timed beside this tree's")
    parser.add_argument("--reps", type=int, default=200, help="timed requests of each kind per script (200)")
    args = parser.parse_args()
    scripts = {"this": HELPER} | ({"before": helper_of(args.before)} if args.before else {})
    medians = anyio.run(bench, scripts, args.reps)
    names = list(scripts)
    print(f"\nin-instance medians (ms), {args.reps} reps; scripts: {', '.join(names)}\n")
    print("| request | " + " | ".join(names) + (" | this / before |" if args.before else " |"))
    print("|---|" + "---:|" * (len(names) + bool(args.before)))
    for op, values in medians.items():
        ratio = f" {values[0] / values[1]:.2f}x |" if args.before else ""
        print(f"| {op} | " + " | ".join(f"{v:.2f}" for v in values) + " |" + ratio)
    save(
        RESULTS_DIR / "bench_helper.json",
        {"reps": args.reps, "before": args.before, "scripts": names},
        medians,
    )


if __name__ == "__main__":
    main()
