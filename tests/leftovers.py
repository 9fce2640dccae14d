"""Running a user's script as a child process, and what it may leave behind: shared by the tests
that run the README's snippets, our examples and PraisonAI's example files."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

from praisonai._ledger import Ledger, home_tag
from praisonai.compute.testing.sshd import SSHServer

ROOT = Path(__file__).resolve().parent.parent


def child_env(home: Path) -> dict[str, str]:
    """This process's environment for a child run as a user: no model keys, this checkout first
    on the path, ``home`` as PRAISONAI_HOME."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["PRAISONAI_HOME"] = str(home)
    return env


def remove_leftovers(home: Path, ssh_places: set[str]) -> dict[str, list[str]]:
    """What a run left behind — containers, local instances, ledger rows, processes working in its
    home or in new SSH workspaces, SSH instance directories — removed, and reported by kind."""
    left = {
        "containers": _remove_docker_leftovers(home),
        "local instances": _local_instances(home),
        "ledger rows": _ledger_rows(home),
        "processes": [str(pid) for pid in _processes_in(home, *map(Path, ssh_places))],
        "ssh instances": sorted(ssh_places),
    }
    for pid in left["processes"]:
        with contextlib.suppress(OSError):
            os.kill(int(pid), signal.SIGKILL)
    for place in ssh_places:
        shutil.rmtree(place, ignore_errors=True)
    return {kind: found for kind, found in left.items() if found}


def _remove_docker_leftovers(home: Path) -> list[str]:
    """Remove the containers and captures labelled with ``home``, and its spool volumes no container
    uses; return the containers found. (Captures are kept by design, so they are removed, not
    reported.)"""
    docker = ["docker", "ps", "-aq", "--filter", f"label=praisonai.home={home_tag(home)}"]
    try:
        containers = subprocess.run(docker, capture_output=True, text=True, check=False).stdout.split()
    except FileNotFoundError:  # no docker CLI: nothing of docker can be left
        return []
    if containers:
        subprocess.run(["docker", "rm", "-f", "-v", *containers], capture_output=True, check=False)
    spools = ["--filter", "label=praisonai.spool", "--filter", f"label=praisonai.home={home_tag(home)}"]
    subprocess.run(["docker", "volume", "prune", "-f", *spools], capture_output=True, check=False)
    images = subprocess.run(
        ["docker", "images", "-q", "--filter", f"label=praisonai.home={home_tag(home)}"],
        capture_output=True, text=True, check=False,
    ).stdout.split()  # fmt: skip
    if images:
        subprocess.run(["docker", "rmi", "-f", *set(images)], capture_output=True, check=False)
    return containers


def _local_instances(home: Path) -> list[str]:
    root = home / "local"
    return [p.name for p in root.iterdir() if p.name.startswith("local_")] if root.is_dir() else []


def _ledger_rows(home: Path) -> list[str]:
    path = home / "ledger.sqlite3"
    return [e.instance_id for e in Ledger(path).entries()] if path.exists() else []


def _processes_in(*places: Path) -> list[int]:
    """Processes whose working directory is inside one of ``places`` (an instance's commands)."""
    return [pid for pid, cwd in _cwds() for p in places if cwd == str(p) or cwd.startswith(f"{p}/")]


def _cwds() -> Iterator[tuple[int, str]]:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                yield int(entry.name), os.readlink(entry / "cwd")
            except OSError:  # gone, or not ours to read
                continue


def ssh_instances(server: SSHServer | None) -> set[str]:
    """The instance directories on the test sshd (taken before a run, to tell the new ones)."""
    if server is None:
        return set()
    root = server.home / ".praisonai" / "instances"  # workspaces, and their records under .praisonai
    found = {str(p) for place in (root, root / ".praisonai") if place.is_dir() for p in place.iterdir()}
    return found - {str(root / ".praisonai")}
