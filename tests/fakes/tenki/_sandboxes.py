"""The Tenki fake's sandboxes: real local docker containers, driven with the docker CLI."""

from __future__ import annotations

import subprocess
from typing import Any, NoReturn

from fakes import docker

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


def start(
    name: str, fake_id: str, env: dict[str, str], *, network_none: bool, image: str = docker.IMAGE
) -> str:
    """Start a container that idles until it is removed; its id."""
    options = ["--init", "--label", f"{OWNER_LABEL}={fake_id}", "--name", name, "-w", HOME]
    return docker.run_detached(
        options + (["--network", "none"] if network_none else []), [image, "sleep", "infinity"], env
    )


def freeze(container: str, *, frozen: bool) -> None:
    """``docker pause``/``unpause``: processes and files kept, as Tenki's pause keeps them."""
    done = docker.docker("pause" if frozen else "unpause", container)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.decode(errors="replace").strip())


def clear_tmp(container: str) -> None:
    docker.docker("exec", container, "find", "/tmp", "-mindepth", "1", "-delete", timeout=30)


def leftovers(fake_id: str) -> list[str]:
    return docker.leftovers(OWNER_LABEL, fake_id)


def run(
    container: str, run_id: str, argv: list[str], cwd: str, env: dict[str, str]
) -> subprocess.Popen[bytes]:
    """Start ``argv`` in ``container`` from ``cwd``, its three pipes attached."""
    command = ["exec", "-i", *docker.env_flags(env), container, "sh", "-c", WRAPPER, run_id, cwd, *argv]
    return docker.popen(*command, env=env, bufsize=0)


def signal_group(container: str, run_id: str, signal: str) -> None:
    """Send ``signal`` to the command's whole process group (what the guest agent does)."""
    script = f'p=$(cat {PIDS}/"$0" 2>/dev/null) && kill -{signal} -"$p" 2>/dev/null; true'
    docker.docker("exec", container, "sh", "-c", script, run_id, timeout=30)


def commit(container: str, tag: str) -> None:
    docker.commit(container, tag, f"{OWNER_LABEL}=snapshot")


def abort(context: Any, code: Any, message: str) -> NoReturn:
    """End an RPC with ``code`` (``context.abort`` raises; this says so to the type checker)."""
    context.abort(code, message)
    raise AssertionError("grpc's abort returned")
