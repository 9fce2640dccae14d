"""The Fly fake's machines: real local docker containers, driven with the docker CLI."""

from __future__ import annotations

import subprocess

from fakes import docker

OWNER_LABEL = "praisonai.test.flyio-fake"  # every container the fake starts carries it


def start(
    name: str, fake_id: str, env: dict[str, str], init: list[str] | None, *, cpus: int, memory_mb: int
) -> str:
    """Start a container running ``init`` (PID 1; ``sleep infinity`` when absent); its id."""
    command = init or ["sleep", "infinity"]
    options = ["--label", f"{OWNER_LABEL}={fake_id}", "--name", name]
    options += ["--cpus", str(cpus), "--memory", f"{memory_mb}m", "--entrypoint", command[0]]
    return docker.run_detached(options, [docker.IMAGE, *command[1:]], env)


def leftovers(fake_id: str) -> list[str]:
    return docker.leftovers(OWNER_LABEL, fake_id)


def running(container: str) -> bool:
    done = docker.docker("inspect", "-f", "{{.State.Running}}", container)
    return done.stdout.decode().strip() == "true"


def exec_argv(
    container: str, argv: list[str], stdin: bytes, limit_s: float
) -> tuple[int, bytes, bytes] | None:
    """Run ``argv`` in the container with ``stdin``; (exit code, stdout, stderr), or ``None`` when
    it outlived ``limit_s`` (the docker client is killed; what runs inside is left to itself, as
    nothing says Fly kills it)."""
    try:
        done = docker.docker("exec", "-i", container, *argv, data=stdin, timeout=limit_s)
    except subprocess.TimeoutExpired:
        return None
    return done.returncode, done.stdout, done.stderr
