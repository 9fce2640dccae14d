"""The Tenki fake's sandboxes: real local docker containers, driven with the docker CLI."""

from __future__ import annotations

import os
import subprocess
from typing import Any, NoReturn

IMAGE = "praisonai-sandbox:latest"
OWNER_LABEL = "praisonai.test.tenki-fake"  # every container the fake starts carries it
HOME = "/home/tenki"  # Tenki's workdir: relative exec cwds resolve under it
PIDS = "/tmp/.tenki-fake"  # one file per running command: its process group id

#: Runs one command: records the process group (``timeout`` makes itself its leader; duration 0
#: means no timer: the fake's clock does the killing), goes to the cwd or says why not.
WRAPPER = (
    f'mkdir -p {PIDS} && echo $$ > {PIDS}/"$0" || exit 125\n'
    'cd -- "$1" 2>/dev/null || {\n'
    '  echo "praisonai-fake: chdir $1: no such file or directory" >&2; exit 200\n'
    "}\n"
    "shift\n"
    'exec timeout 0 "$@"\n'
)
NO_CWD_EXIT = 200


def docker(*args: str, data: bytes | None = None, timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["docker", *args], input=data, capture_output=True, timeout=timeout, check=False)


def start(name: str, fake_id: str, env: dict[str, str], *, network_none: bool, image: str = IMAGE) -> str:
    """Start a container that idles until it is removed; its id."""
    argv = ["run", "-d", "--init", "--label", f"{OWNER_LABEL}={fake_id}", "--name", name, "-w", HOME]
    if network_none:
        argv += ["--network", "none"]
    for key in env:  # values through the environment of the docker client, not its argv
        argv += ["-e", key]
    done = subprocess.run(
        ["docker", *argv, image, "sleep", "infinity"],
        capture_output=True, timeout=120, check=False, env={**os.environ, **env},
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(done.stderr.decode(errors="replace").strip())
    return done.stdout.decode().strip()


def run(
    container: str, run_id: str, argv: list[str], cwd: str, env: dict[str, str]
) -> subprocess.Popen[bytes]:
    """Start ``argv`` in ``container`` from ``cwd``, its three pipes attached."""
    command = ["docker", "exec", "-i"]
    for key in env:
        command += ["-e", key]
    command += [container, "sh", "-c", WRAPPER, run_id, cwd, *argv]
    return subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, **env}, bufsize=0,
    )  # fmt: skip


def signal_group(container: str, run_id: str, signal: str) -> None:
    """Send ``signal`` to the command's whole process group (what the guest agent does)."""
    script = f'p=$(cat {PIDS}/"$0" 2>/dev/null) && kill -{signal} -"$p" 2>/dev/null; true'
    docker("exec", container, "sh", "-c", script, run_id, timeout=30)


def remove(container: str) -> None:
    docker("rm", "-f", container)


def commit(container: str, tag: str) -> None:
    done = docker("commit", "--change", "LABEL " + f"{OWNER_LABEL}=snapshot", container, tag, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.decode(errors="replace").strip())


def leftovers(fake_id: str) -> list[str]:
    done = docker("ps", "-aq", "--filter", f"label={OWNER_LABEL}={fake_id}")
    return done.stdout.decode().split()


def abort(context: Any, code: Any, message: str) -> NoReturn:
    """End an RPC with ``code`` (``context.abort`` raises; this says so to the type checker)."""
    context.abort(code, message)
    raise AssertionError("grpc's abort returned")
