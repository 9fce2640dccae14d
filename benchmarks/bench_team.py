"""Benchmark a team's tools on one shared docker instance: ours vs raw docker-py vs the peer.

A team of ``--agents`` agents (threads, as an agent's sync tool loop would be) each runs
``--commands`` shell commands on ONE shared instance:

* ours: ``SharedCompute(DockerCompute())``, each agent through its own ``execute_command`` tool
  (its own shell session on the instance); provisioning happens on the first call and is timed.
* raw: the same work through docker-py ``Container.exec_run`` on one container with our settings.
* peer: praisonaiagents' ``SharedCompute("docker")`` (praisonai-sandbox's provider), its
  ``execute_command`` tool, when installed.

Reported: total wall time (including provisioning) and commands/s. No LLM is involved: this is
the tool path only. Results JSON: benchmarks/results/bench_team.json.

    python3 benchmarks/bench_team.py [--agents 16] [--commands 20]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import RESULTS_DIR, save

from praisonai.compute.providers.docker import DEFAULT_IMAGE, DockerCompute
from praisonai.managed import SharedCompute

HAVE_PEER = (
    importlib.util.find_spec("praisonaiagents") is not None
    and importlib.util.find_spec("praisonai_sandbox") is not None
)


@dataclass
class Member:
    name: str
    tools: list[Callable[..., Any]] = field(default_factory=list)
    instructions: str = ""
    backend: object = None


def command(agent: int, step: int) -> str:
    return f"echo {agent}-{step} >> log-{agent}.txt && wc -l < log-{agent}.txt"


def team_run(agents: int, commands: int, call: Callable[[int, int], str]) -> float:
    """Run every agent's commands in its own thread; the wall time in seconds. Checks outputs."""
    errors: list[str] = []
    barrier = threading.Barrier(agents)

    def agent(index: int) -> None:
        barrier.wait()
        try:
            for step in range(commands):
                out = call(index, step).strip()
                if out != str(step + 1):
                    errors.append(f"agent {index} step {step}: {out!r}")
        except Exception as exc:  # a thread's exception would otherwise vanish
            errors.append(f"agent {index}: {exc!r}"[:300])

    threads = [threading.Thread(target=agent, args=(i,)) for i in range(agents)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    if errors:
        raise AssertionError(f"{len(errors)} wrong outputs, e.g. {errors[:3]}")
    return wall


def ours(args: argparse.Namespace) -> float:
    members = [Member(f"a{i}") for i in range(args.agents)]
    with SharedCompute(DockerCompute(), environment=False) as shared:
        shared.attach(members)
        tools = [next(t for t in m.tools if t.__name__ == "execute_command") for m in members]
        return team_run(args.agents, args.commands, lambda i, s: tools[i](command(i, s)))


def raw(args: argparse.Namespace) -> float:
    import docker

    client = docker.from_env(max_pool_size=2 * args.agents)
    box: dict[str, Any] = {}

    def call(i: int, s: int) -> str:
        if "c" not in box:
            with lock:
                if "c" not in box:
                    box["c"] = client.containers.run(
                        DEFAULT_IMAGE, ["sleep", "infinity"], detach=True, init=True,
                        working_dir="/workspace",
                        cap_drop=["ALL"], security_opt=["no-new-privileges:true"], pids_limit=4096,
                        nano_cpus=10**9, mem_limit="1024m", name=f"praisonai_bench_{uuid.uuid4().hex[:12]}",
                        labels={"praisonai.bench": "1"},
                    )  # fmt: skip
        return str(box["c"].exec_run(["sh", "-c", command(i, s)]).output.decode())

    lock = threading.Lock()
    try:
        return team_run(args.agents, args.commands, call)
    finally:
        if "c" in box:
            box["c"].remove(force=True)


def peer(args: argparse.Namespace) -> float:
    from praisonaiagents.managed.protocols import ComputeConfig as PeerConfig  # type: ignore
    from praisonaiagents.managed.shared_compute import SharedCompute as PeerShared  # type: ignore

    # Its default image (python:3.12-slim) cannot be pulled here: give it ours.
    config = PeerConfig(image=DEFAULT_IMAGE, working_dir="/workspace")
    with PeerShared("docker", config=config) as shared:
        tool = next(t for t in shared.build_tools() if t.__name__ == "execute_command")
        return team_run(args.agents, args.commands, lambda i, s: tool(command(i, s)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=16)
    parser.add_argument("--commands", type=int, default=20)
    parser.add_argument("--json", type=Path, default=RESULTS_DIR / "bench_team.json")
    args = parser.parse_args()
    total = args.agents * args.commands
    sides: dict[str, Callable[[argparse.Namespace], float]] = {"ours": ours, "raw": raw}
    if HAVE_PEER:
        sides["peer"] = peer
    results: dict[str, Any] = {}
    print(f"{args.agents} agents x {args.commands} commands = {total} commands on one instance\n")
    print("| side | wall s (incl. provision) | commands/s |\n|---|---:|---:|")
    for name, run in sides.items():
        try:
            wall = run(args)
        except Exception as exc:  # a side that fails is reported, not hidden
            results[name] = {"error": str(exc)}
            print(f"| {name} | failed: {exc} | |")
            continue
        results[name] = {"wall_s": wall, "commands_per_s": total / wall}
        print(f"| {name} | {wall:.2f} | {total / wall:.0f} |")
    if "wall_s" in results.get("raw", {}) and "wall_s" in results.get("ours", {}):
        speedup = results["raw"]["wall_s"] / results["ours"]["wall_s"]
        print(f"\nours is {speedup:.1f}x faster than raw exec_run")
    save(args.json, {"agents": args.agents, "commands": args.commands, "peer_installed": HAVE_PEER}, results)


if __name__ == "__main__":
    main()
