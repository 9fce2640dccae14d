"""The one way the vendor fakes drive docker. Each fake's sandboxes (machines, pods) are local
docker containers run with the docker CLI and labelled ``<owner label>=<fake id>``, so that a fake
removes only its own containers (fakes of other processes run beside it) and a test finds whatever
one left behind.

Environment values reach a container through the docker client's environment, never its argv:
pass ``env`` and name the keys with ``-e KEY`` (:func:`env_flags`)."""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Mapping, Sequence

__all__ = [
    "IMAGE",
    "commit",
    "docker",
    "docker_async",
    "env_flags",
    "exec_async",
    "leftovers",
    "popen",
    "remove",
    "remove_image",
    "run_detached",
    "stop",
]

#: The image every fake runs its sandboxes from unless told another.
IMAGE = "praisonai-sandbox:latest"


def _environ(env: Mapping[str, str] | None) -> dict[str, str] | None:
    return None if env is None else {**os.environ, **env}


def env_flags(env: Mapping[str, str]) -> list[str]:
    """``-e KEY`` for each key: the values come from the client's environment (``env=``)."""
    return [arg for key in env for arg in ("-e", key)]


def docker(
    *args: str,
    data: bytes | None = None,
    timeout: float | None = 120,
    env: Mapping[str, str] | None = None,
    merge_stderr: bool = False,
) -> subprocess.CompletedProcess[bytes]:
    """``docker ARGS`` (stdin ``data``; stderr into stdout with ``merge_stderr``), never raising
    for its exit status; TimeoutExpired after ``timeout`` seconds (the client is killed, what
    runs in the container is not)."""
    stderr = subprocess.STDOUT if merge_stderr else subprocess.PIPE
    return subprocess.run(
        ["docker", *args],
        input=data,
        stdout=subprocess.PIPE,
        stderr=stderr,
        timeout=timeout,
        check=False,
        env=_environ(env),
    )


def popen(
    *args: str,
    stdin: int = subprocess.PIPE,
    stderr: int = subprocess.PIPE,
    env: Mapping[str, str] | None = None,
    bufsize: int = -1,
) -> subprocess.Popen[bytes]:
    """``docker ARGS`` running, its stdout a pipe (stdin and stderr as given), for a fake that
    streams a command's output or input."""
    return subprocess.Popen(
        ["docker", *args],
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=stderr,
        env=_environ(env),
        bufsize=bufsize,
    )


def run_detached(options: Sequence[str], command: Sequence[str], env: Mapping[str, str]) -> str:
    """``docker run -d OPTIONS COMMAND`` with ``env`` in the container. The container's id;
    RuntimeError with docker's message when it fails."""
    done = docker("run", "-d", *options, *env_flags(env), *command, env=env)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.decode(errors="replace").strip())
    return done.stdout.decode().strip()


def commit(container: str, tag: str, label: str) -> None:
    """``docker commit`` the container as ``tag``, the image labelled ``label`` (``key=value``) so
    that its fake finds it; RuntimeError with docker's message when it fails."""
    done = docker("commit", "--change", f"LABEL {label}", container, tag, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.decode(errors="replace").strip())


def remove(*containers: str) -> None:
    if containers:
        docker("rm", "-f", *containers)


def stop(container: str) -> None:
    docker("stop", "-t", "0", container)


def remove_image(*tags: str) -> None:
    if tags:
        docker("rmi", "-f", *tags)


def leftovers(owner_label: str, fake_id: str) -> list[str]:
    """The containers a fake (``owner_label=fake_id``) made that still exist."""
    return docker("ps", "-aq", "--filter", f"label={owner_label}={fake_id}").stdout.decode().split()


async def docker_async(*args: str, data: bytes | None = None) -> tuple[int, bytes, bytes]:
    """:func:`docker` for a fake that serves on an event loop: (exit code, stdout, stderr)."""
    proc = await asyncio.create_subprocess_exec(
        "docker",
        *args,
        stdin=asyncio.subprocess.PIPE if data is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate(data)
    return proc.returncode or 0, out, err


async def exec_async(*args: str) -> asyncio.subprocess.Process:
    """:func:`popen` for a fake that serves on an event loop: all three pipes attached."""
    return await asyncio.create_subprocess_exec(
        "docker",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
