"""What the vendor fakes share about their sandboxes: each is a local docker container, driven
with the docker CLI and labelled with its fake's owner label and id, so that a test finds (and
removes) whatever a fake left behind."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence


def docker(*args: str, data: bytes | None = None, timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    """``docker ARGS`` (stdin ``data``), never raising for its exit status."""
    return subprocess.run(["docker", *args], input=data, capture_output=True, timeout=timeout, check=False)


def run_detached(options: Sequence[str], command: Sequence[str], env: Mapping[str, str]) -> str:
    """``docker run -d OPTIONS COMMAND`` with ``env`` in the container: the names on the command
    line, the values through the docker client's environment (never its argv). The container's
    id; RuntimeError with docker's message when it fails."""
    names = [arg for key in env for arg in ("-e", key)]
    done = subprocess.run(
        ["docker", "run", "-d", *options, *names, *command],
        capture_output=True, timeout=120, check=False, env={**os.environ, **env},
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(done.stderr.decode(errors="replace").strip())
    return done.stdout.decode().strip()


def remove(container: str) -> None:
    docker("rm", "-f", container)


def stop(container: str) -> None:
    docker("stop", "-t", "0", container)


def leftovers(owner_label: str, fake_id: str) -> list[str]:
    """The containers a fake (``owner_label=fake_id``) made that still exist."""
    return docker("ps", "-aq", "--filter", f"label={owner_label}={fake_id}").stdout.decode().split()
