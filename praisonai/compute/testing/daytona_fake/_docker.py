"""The Daytona fake's sandboxes: real local docker containers, driven with the docker CLI."""

from __future__ import annotations

import os
import subprocess
import time

from praisonai.compute.testing import containers
from praisonai.compute.testing.containers import docker as docker  # the fake's modules use these from here
from praisonai.compute.testing.containers import remove as remove
from praisonai.compute.testing.containers import run_detached
from praisonai.compute.testing.containers import stop as stop

IMAGE = "praisonai-sandbox:latest"
OWNER_LABEL = "praisonai.test.daytona-fake"  # every container the fake starts carries it
WORKDIR = "/workspace"


def start(name: str, fake_id: str, env: dict[str, str], *, network_none: bool, image: str = IMAGE) -> str:
    """Start a container that idles until it is removed; its id."""
    options = ["--init", "--label", f"{OWNER_LABEL}={fake_id}", "--name", name, "-w", WORKDIR]
    return run_detached(
        options + (["--network", "none"] if network_none else []), [image, "sleep", "infinity"], env
    )


def leftovers(fake_id: str) -> list[str]:
    return containers.leftovers(OWNER_LABEL, fake_id)


def commit(container: str, tag: str) -> None:
    done = docker("commit", "--change", "LABEL " + f"{OWNER_LABEL}=snapshot", container, tag, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.decode(errors="replace").strip())


def exec_merged(
    container: str, command: str, cwd: str | None, env: dict[str, str], timeout: float
) -> tuple[int, bytes, bool]:
    """Run ``command`` with the first of zsh, bash, sh as the daemon does, stdout and stderr in ONE pipe (the
    merged ``result`` Daytona returns), stdin closed; at ``timeout`` the command's whole process
    group is killed (GNU ``timeout`` signals its group). Returns (exit code, output, timed out)."""
    argv = ["docker", "exec", "-w", cwd or WORKDIR]
    for key in env:
        argv += ["-e", key]
    # The daemon's shell: "the first available of zsh, bash or sh" (bash in praisonai-sandbox).
    pick = 'for s in zsh bash sh; do command -v "$s" >/dev/null && exec "$s" -c "$0"; done'
    argv += [container, "timeout", "-s", "KILL", f"{timeout:g}", "sh", "-c", pick, command]
    started = time.monotonic()
    done = subprocess.run(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        env={**os.environ, **env}, timeout=timeout + 30, check=False,
    )  # fmt: skip
    timed_out = done.returncode == 137 and time.monotonic() - started >= timeout - 0.05
    return done.returncode, done.stdout, timed_out


def is_dir(container: str, path: str) -> bool:
    return docker("exec", container, "test", "-d", path).returncode == 0


def write(container: str, path: str, data: bytes) -> str | None:
    """Write ``data`` to ``path`` (parents created); an error message, or ``None``."""
    script = 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"'
    done = docker("exec", "-i", "-w", WORKDIR, container, "sh", "-c", script, "sh", path, data=data)
    return None if done.returncode == 0 else done.stderr.decode(errors="replace").strip()


def read(container: str, paths: list[str]) -> subprocess.Popen[bytes]:
    """One process whose stdout is, per path, a line ``F<size>`` then the file's bytes, or a
    line ``D`` (a directory) or ``N`` (missing), so the caller can stream them all."""
    script = (
        'for p; do if [ -d "$p" ]; then echo D; elif [ -f "$p" ]; then '
        'echo "F$(wc -c < "$p")"; cat -- "$p"; else echo N; fi; done'
    )
    return subprocess.Popen(
        ["docker", "exec", "-w", WORKDIR, container, "sh", "-c", script, "sh", *paths],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip


def delete(container: str, path: str, recursive: bool) -> bool:
    flag = "-rf" if recursive else "-f"
    script = f'[ -e "$1" ] || exit 3; rm {flag} -- "$1"'
    return docker("exec", "-w", WORKDIR, container, "sh", "-c", script, "sh", path).returncode == 0
