"""The Fly fake's machines: real local docker containers, driven with the docker CLI."""

from __future__ import annotations

import os
import subprocess

IMAGE = "praisonai-sandbox:latest"
OWNER_LABEL = "praisonai.test.flyio-fake"  # every container the fake starts carries it


def docker(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["docker", *args], capture_output=True, timeout=timeout, check=False)


def start(
    name: str, fake_id: str, env: dict[str, str], init: list[str] | None, *, cpus: int, memory_mb: int
) -> str:
    """Start a container running ``init`` (PID 1; ``sleep infinity`` when absent); its id."""
    argv = ["run", "-d", "--label", f"{OWNER_LABEL}={fake_id}", "--name", name]
    argv += ["--cpus", str(cpus), "--memory", f"{memory_mb}m"]
    for key in env:  # values through the docker client's environment, not its argv
        argv += ["-e", key]
    command = init or ["sleep", "infinity"]
    done = subprocess.run(
        ["docker", *argv, "--entrypoint", command[0], IMAGE, *command[1:]],
        capture_output=True, timeout=120, check=False, env={**os.environ, **env},
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(done.stderr.decode(errors="replace").strip())
    return done.stdout.decode().strip()


def remove(container: str) -> None:
    docker("rm", "-f", container)


def stop(container: str) -> None:
    docker("stop", "-t", "0", container)


def running(container: str) -> bool:
    done = docker("inspect", "-f", "{{.State.Running}}", container)
    return done.stdout.decode().strip() == "true"


def exec_argv(
    container: str, argv: list[str], stdin: bytes, limit_s: float
) -> tuple[int, bytes, bytes] | None:
    """Run ``argv`` in the container with ``stdin``; (exit code, stdout, stderr), or ``None`` when
    it outlived ``limit_s`` (the docker client is killed; what runs inside is left to itself, as
    nothing says Fly kills it)."""
    try:
        done = subprocess.run(
            ["docker", "exec", "-i", container, *argv], input=stdin, capture_output=True,
            timeout=limit_s, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return None
    return done.returncode, done.stdout, done.stderr


def leftovers(fake_id: str) -> list[str]:
    done = docker("ps", "-aq", "--filter", f"label={OWNER_LABEL}={fake_id}")
    return done.stdout.decode().split()
