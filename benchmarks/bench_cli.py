"""Benchmark the ``praisonai`` command's start-up, the library's import, and a one-shot docker run
from the command and from the library, each beside its floor.

Every sample is a whole new process, as a user would start it:

- ``--version`` and ``--help``: the command as its console script runs it
  (``from praisonai.cli import main``), beside a bare ``python -c pass`` (the interpreter's floor).
- ``import praisonai`` and ``from praisonai import Sandbox``: what a library user's process pays
  before its first call, beside the same ``python -c pass``.
- ``sandbox run --compute docker -- true``: beside a docker-py process doing
  ``containers.run(image, "true", remove=True)`` of the same image, which creates, starts, waits
  for and removes one container; and beside docker-py doing what ours does (an idle container
  with our settings, one exec, a forced removal), which shows what that design itself costs.
- ``Sandbox.run("true", "docker")``: a library process's one-shot run, beside the same docker-py
  ``containers.run`` process.
- ``compute ps``, ``compute providers`` and ``managed ps`` (an empty home, every extra installed,
  no cloud credential): beside ``docker ps`` and ``python -c pass``.
- ``import praisonai`` + ``Sandbox.create("local")`` and its removal: a library's first instance,
  beside ``python -c pass``.

The commands of each group take turns going first from rep to rep, to cancel drift. Prints medians
and p95 (ms), the ratios, and PASS/MISS per target: ``--version`` and ``--help`` <= 100 ms, each
import <= 150 ms above ``python -c pass``, ``sandbox run`` and ``Sandbox.run`` <= 1.0x the docker-py
run, ``ps`` and ``providers`` <= 300 ms, a first local instance <= 150 ms of our own time.
Saves all samples to benchmarks/results/bench_cli.json.
Containers carry the label ``praisonai.bench=1`` and are removed at the end, even on error.
The bytecode of what the commands load is written first, as an install does (``compile_package``).

    python benchmarks/bench_cli.py [--n 15] [--warmup 2] [--image praisonai-sandbox:latest]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import p95, save, summary

RUN_ID = uuid.uuid4().hex[:12]
RESULTS = Path(__file__).parent / "results" / "bench_cli.json"
CLI = [sys.executable, "-c", "import sys; from praisonai.cli import main; sys.exit(main())"]
# The same lifecycle as ours done with docker-py alone: an idle container (our host settings), one
# exec, a forced removal. Not a target: it shows what the instance-then-exec design itself costs.
DOCKER_PY_EXEC = (
    "import sys, docker; api = docker.from_env().api; hc = api.create_host_config(init=True, "
    "cap_drop=['ALL'], cap_add=['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'SETGID', 'SETUID', "
    "'NET_BIND_SERVICE'], security_opt=['no-new-privileges:true'], pids_limit=4096, nano_cpus=10**9, "
    "mem_limit='1024m', network_mode='bridge'); "
    "cid = api.create_container(sys.argv[1], command=['sleep', '300'], host_config=hc, detach=True, "
    "labels={'praisonai.bench': '1', 'praisonai.bench.run': sys.argv[2]})['Id']; api.start(cid); "
    "api.exec_start(api.exec_create(cid, ['true'])['Id']); api.remove_container(cid, force=True, v=True)"
)
# The library's one-shot run, as a user's script would make it (no environment file read).
LIBRARY_RUN = (
    "import sys; from praisonai import Sandbox; "
    "sys.exit(Sandbox.run('true', 'docker', image=sys.argv[1], environment=False).exit_code)"
)
# A library's first instance: the import, one local instance made and removed.
FIRST_LOCAL = "from praisonai import Sandbox; Sandbox.create('local', environment=False).close()"
# Loads what the timed commands load, then writes each loaded module's source path to argv[1].
LOADED = f"""
import contextlib, sys
from praisonai.cli._app import run
for args in (["compute", "providers"], ["compute", "ps"], ["managed", "ps"]):
    with contextlib.suppress(Exception, SystemExit):
        run(args)
{FIRST_LOCAL}
paths = {{getattr(module, "__file__", None) or "" for module in list(sys.modules.values())}}
open(sys.argv[1], "w").write("\\n".join(sorted(paths)))
"""
DOCKER_PY = (
    "import sys, docker; docker.from_env().containers.run("
    "sys.argv[1], 'true', remove=True, labels={'praisonai.bench': '1', 'praisonai.bench.run': sys.argv[2]})"
)


def commands(image: str) -> dict[str, list[str]]:
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "praisonai --version": [*CLI, "--version"],
        "praisonai --help": [*CLI, "--help"],
        "import praisonai": [sys.executable, "-c", "import praisonai"],
        "from praisonai import Sandbox": [sys.executable, "-c", "from praisonai import Sandbox"],
        "docker-py containers.run": [sys.executable, "-c", DOCKER_PY, image, RUN_ID],
        "docker-py create+exec+rm": [sys.executable, "-c", DOCKER_PY_EXEC, image, RUN_ID],
        "praisonai sandbox run": [*CLI, "sandbox", "run", "--compute", "docker", "--image", image,
                                  "--no-environment", "--", "true"],
        "Sandbox.run (library)": [sys.executable, "-c", LIBRARY_RUN, image],
        "docker ps": ["docker", "ps"],
        "praisonai compute ps": [*CLI, "compute", "ps"],
        "praisonai compute providers": [*CLI, "compute", "providers"],
        "praisonai managed ps": [*CLI, "managed", "ps"],
        "Sandbox.create('local')": [sys.executable, "-c", FIRST_LOCAL],
    }  # fmt: skip


#: Commands measured side by side, each group's order rotating from rep to rep.
GROUPS = [("python -c pass", "import praisonai", "from praisonai import Sandbox", "praisonai --version",
           "praisonai --help"),
          ("docker-py containers.run", "docker-py create+exec+rm", "praisonai sandbox run",
           "Sandbox.run (library)"),
          ("python -c pass", "docker ps", "praisonai compute ps", "praisonai compute providers",
           "praisonai managed ps", "Sandbox.create('local')")]  # fmt: skip
#: (command, the floor it is compared with): the ratios printed.
PAIRS = [("praisonai --version", "python -c pass"), ("praisonai --help", "python -c pass"),
         ("import praisonai", "python -c pass"), ("from praisonai import Sandbox", "python -c pass"),
         ("praisonai sandbox run", "docker-py containers.run"),
         ("Sandbox.run (library)", "docker-py containers.run"),
         ("docker-py create+exec+rm", "docker-py containers.run"),
         ("praisonai sandbox run", "docker-py create+exec+rm"),
         ("praisonai compute ps", "docker ps"), ("praisonai compute providers", "docker ps"),
         ("praisonai managed ps", "docker ps"), ("Sandbox.create('local')", "python -c pass")]  # fmt: skip
# (name, limit, unit, floor): "ms" is the median itself, "+ms" the median minus its floor's, "x"
# the ratio of medians to its floor.
TARGETS = [("praisonai --version", 100.0, "ms", None), ("praisonai --help", 100.0, "ms", None),
           ("import praisonai", 150.0, "+ms", "python -c pass"),
           ("from praisonai import Sandbox", 150.0, "+ms", "python -c pass"),
           ("praisonai sandbox run", 1.0, "x", "docker-py containers.run"),
           ("Sandbox.run (library)", 1.0, "x", "docker-py containers.run"),
           ("praisonai compute ps", 300.0, "ms", None), ("praisonai compute providers", 300.0, "ms", None),
           ("praisonai managed ps", 300.0, "ms", None),
           ("Sandbox.create('local')", 150.0, "+ms", "python -c pass")]  # fmt: skip


def timed_run(argv: Sequence[str], env: dict[str, str]) -> float:
    """Milliseconds from spawn to exit of one process; it must succeed."""
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, check=False)
    elapsed = (time.perf_counter() - start) * 1000
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[-6:])} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return elapsed


def measure(image: str, n: int, warmup: int, env: dict[str, str]) -> dict[str, list[float]]:
    cmds = commands(image)
    samples: dict[str, list[float]] = {name: [] for name in cmds}
    for rep in range(warmup + n):
        for group in GROUPS:
            shift = rep % len(group)
            for name in group[shift:] + group[:shift]:
                ms = timed_run(cmds[name], env)
                if rep >= warmup:
                    samples[name].append(ms)
    return samples


def report(samples: dict[str, list[float]]) -> dict[str, float]:
    medians = {name: statistics.median(xs) for name, xs in samples.items() if xs}
    print(f"\n{'command (ms)':<32}{'p50':>10}{'p95':>10}")
    for name, xs in samples.items():
        print(f"{name:<32}{medians[name]:10.1f}{p95(xs):10.1f}")
    print("\nratios (medians):")
    for name, floor in PAIRS:
        ratio, above = medians[name] / medians[floor], medians[name] - medians[floor]
        print(f"  {name:<30} / {floor:<26} {ratio:6.2f}x  {above:+8.1f} ms")
    print("\ntargets:")
    for name, limit, unit, floor in TARGETS:
        value = _against(medians, name, unit, floor)
        verdict = "PASS" if value <= limit else "MISS"
        print(f"  {name:<30} {value:8.2f} {unit:<3} target <= {limit:g} {unit:<3} {verdict}")
    return medians


def _against(medians: dict[str, float], name: str, unit: str, floor: str | None) -> float:
    """A target's measured value: the median (``ms``), above its floor (``+ms``), or its ratio (``x``)."""
    if floor is None:
        return medians[name]
    return medians[name] - medians[floor] if unit == "+ms" else medians[name] / medians[floor]


def cleanup() -> None:
    """Remove this run's containers (docker-py's are gone unless a run failed midway)."""
    found = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=praisonai.bench.run={RUN_ID}"],
        capture_output=True, text=True, check=False,
    ).stdout.split()  # fmt: skip
    if found:
        subprocess.run(["docker", "rm", "-f", *found], capture_output=True, check=False)


def compile_package(env: dict[str, str]) -> None:
    """Write the bytecode of every module the timed commands load, ours and the SDKs', as pip does
    when it installs them: where no bytecode may be written (``PYTHONDONTWRITEBYTECODE``, as here
    and in CI, also while the dependencies were installed), every sample would otherwise compile
    those sources again, which no installed copy does."""
    import py_compile

    with tempfile.NamedTemporaryFile("r", suffix=".txt") as listing:
        subprocess.run([sys.executable, "-c", LOADED, listing.name], env=env, capture_output=True, check=True)
        for source in listing.read().split("\n"):
            if source.endswith(".py"):
                py_compile.compile(source, quiet=2)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=15, help="timed reps per command (default 15)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed reps first (default 2)")
    parser.add_argument("--image", default="praisonai-sandbox:latest")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="praisonai-bench-home-") as home:
        # A home of its own: the run's ledger and locks start empty and go away after.
        env = {**os.environ, "PRAISONAI_HOME": home}
        compile_package(env)
        try:
            samples = measure(args.image, args.n, args.warmup, env)
        finally:
            cleanup()
    medians = report(samples)
    results = {name: summary(xs) for name, xs in samples.items()}
    ratios = {f"{a} / {b}": medians[a] / medians[b] for a, b in PAIRS}
    save(
        RESULTS,
        {"n": args.n, "warmup": args.warmup, "image": args.image},
        {"commands": results, "ratios": ratios},
    )


if __name__ == "__main__":
    main()
