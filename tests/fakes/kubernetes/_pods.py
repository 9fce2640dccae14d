"""The Kubernetes fake's pods: real local docker containers, driven with the docker CLI."""

from __future__ import annotations

import subprocess
from typing import Any

from fakes import docker

OWNER_LABEL = "praisonai.test.k8s-fake"  # every container the fake starts carries it


def start(
    name: str, fake_id: str, pod: dict[str, Any], claims: dict[str, str], *, network: str, aliases: list[str]
) -> tuple[str | None, str]:
    """Start the pod's first container: (container id, "") or (None, why it could not start).
        ``claims`` maps each claim the pod mounts to its docker volume (``_volumes``). The image must
        be present locally (the fake pulls nothing: ``ErrImageNeverPull``). It runs on docker network
    ``network`` (``none``: none) under ``aliases`` there (``_net``)."""
    spec = pod["spec"]
    box = spec["containers"][0]
    argv = ["--pull", "never", "--label", f"{OWNER_LABEL}={fake_id}", "--name", name]
    env = {e["name"]: str(e.get("value", "")) for e in box.get("env") or []}
    if box.get("workingDir"):
        argv += ["-w", box["workingDir"]]
    security = {**(spec.get("securityContext") or {}), **(box.get("securityContext") or {})}
    if security.get("runAsUser") is not None:
        argv += ["--user", f"{security['runAsUser']}:{security.get('runAsGroup', security['runAsUser'])}"]
    if security.get("readOnlyRootFilesystem"):
        argv += ["--read-only"]
    if security.get("allowPrivilegeEscalation") is False:
        argv += ["--security-opt", "no-new-privileges"]
    capabilities = security.get("capabilities") or {}  # the runtime's defaults, less and more
    argv += [f"--cap-drop={name}" for name in capabilities.get("drop") or []]
    argv += [f"--cap-add={name}" for name in capabilities.get("add") or []]
    empty = {v["name"] for v in spec.get("volumes") or [] if "emptyDir" in v}
    dirs = [m["mountPath"] for m in box.get("volumeMounts") or [] if m["name"] in empty]
    for path in dirs:
        argv += ["--tmpfs", f"{path}:rw,exec"]
    by_volume = {
        v["name"]: claims[v["persistentVolumeClaim"]["claimName"]]
        for v in spec.get("volumes") or []
        if "persistentVolumeClaim" in v
    }
    kept = [
        (by_volume[m["name"]], m["mountPath"])
        for m in box.get("volumeMounts") or []
        if m["name"] in by_volume
    ]
    for volume, path in kept:
        argv += ["--mount", f"type=volume,source={volume},target={path}"]
        dirs.append(path)  # writable by the pod's user, as the kubelet's fsGroup makes a claim's root
    limits = (box.get("resources") or {}).get("limits") or {}
    if "cpu" in limits:
        argv += ["--cpus", str(_cpus(str(limits["cpu"])))]
    if "memory" in limits:
        argv += ["--memory", str(limits["memory"]).replace("Mi", "m").replace("Gi", "g")]
    if spec.get("shareProcessNamespace"):  # the pause process is PID 1 and reaps orphans
        argv += ["--init"]
    argv += ["--network", network, *[arg for alias in aliases for arg in ("--network-alias", alias)]]
    command = list(box.get("command") or []) + list(box.get("args") or [])
    if command:
        argv += ["--entrypoint", command[0]]
    try:
        cid = docker.run_detached(argv, [box["image"], *command[1:]], env)
    except RuntimeError as exc:
        return None, str(exc)
    if dirs:  # an emptyDir is world-writable, as a kubelet makes it (docker copies the image's mode up)
        docker.docker("exec", "-u", "0", cid, "chmod", "1777", *dirs)
    group = (spec.get("securityContext") or {}).get("fsGroup")
    if dirs and group is not None:  # the kubelet's volume ownership: the group's, setgid
        docker.docker("exec", "-u", "0", cid, "chgrp", str(group), *dirs)
        docker.docker("exec", "-u", "0", cid, "chmod", "2777", *dirs)
    return cid, ""


def _cpus(quantity: str) -> float:
    return int(quantity[:-1]) / 1000 if quantity.endswith("m") else float(quantity)


def state(container: str) -> tuple[bool, int]:
    """(running, exit code) of a container; a missing one is (False, 137)."""
    done = docker.docker("inspect", "-f", "{{.State.Running}} {{.State.ExitCode}}", container)
    words = done.stdout.decode().split()
    if done.returncode != 0 or len(words) != 2:
        return False, 137
    return words[0] == "true", int(words[1])


def leftovers(fake_id: str) -> list[str]:
    return docker.leftovers(OWNER_LABEL, fake_id)


def exec_process(container: str, argv: list[str], stdin: bool) -> subprocess.Popen[bytes]:
    """``docker exec`` of ``argv`` with separate stdout/stderr pipes (no TTY)."""
    flags = ["-i"] if stdin else []
    return docker.popen(
        "exec", *flags, container, *argv, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL, bufsize=0
    )
