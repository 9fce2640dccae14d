"""The Daytona fake's sandboxes: real local docker containers, driven with the docker CLI."""

from __future__ import annotations

import subprocess
import time

from fakes import docker

OWNER_LABEL = "praisonai.test.daytona-fake"  # every container the fake starts carries it
WORKDIR = "/workspace"


def start(
    name: str, fake_id: str, env: dict[str, str], *, network_none: bool, image: str = docker.IMAGE
) -> str:
    """Start a container that idles until it is removed; its id."""
    options = ["--init", "--label", f"{OWNER_LABEL}={fake_id}", "--name", name, "-w", WORKDIR]
    return docker.run_detached(
        options + (["--network", "none"] if network_none else []), [image, "sleep", "infinity"], env
    )


def leftovers(fake_id: str) -> list[str]:
    return docker.leftovers(OWNER_LABEL, fake_id)


def commit(container: str, tag: str, env_names: list[str]) -> None:
    """``docker commit`` of the sandbox as ``tag``, without its env (``env_names``, blanked): a
    Daytona snapshot keeps the filesystem, where docker would keep the container's env too."""
    blank = [arg for name in env_names for arg in ("--change", f"ENV {name}=")]
    label = ["--change", f"LABEL {OWNER_LABEL}=snapshot"]
    done = docker.docker("commit", *label, *blank, container, tag, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.decode(errors="replace").strip())


def exec_merged(
    container: str, command: str, cwd: str | None, env: dict[str, str], timeout: float
) -> tuple[int, bytes, bool]:
    """Run ``command`` with the first of zsh, bash, sh as the daemon does, stdout and stderr in ONE pipe (the
    merged ``result`` Daytona returns), stdin closed; at ``timeout`` the command's whole process
    group is killed (GNU ``timeout`` signals its group). Returns (exit code, output, timed out)."""
    argv = ["exec", "-w", cwd or WORKDIR, *docker.env_flags(env)]
    # The daemon's shell: "the first available of zsh, bash or sh" (bash in praisonai-sandbox).
    pick = 'for s in zsh bash sh; do command -v "$s" >/dev/null && exec "$s" -c "$0"; done'
    argv += [container, "timeout", "-s", "KILL", f"{timeout:g}", "sh", "-c", pick, command]
    started = time.monotonic()
    done = docker.docker(*argv, env=env, timeout=timeout + 30, merge_stderr=True)
    timed_out = done.returncode == 137 and time.monotonic() - started >= timeout - 0.05
    return done.returncode, done.stdout, timed_out


def is_dir(container: str, path: str) -> bool:
    return docker.docker("exec", container, "test", "-d", path).returncode == 0


def write(container: str, path: str, data: bytes) -> str | None:
    """Write ``data`` to ``path`` (parents created); an error message, or ``None``."""
    script = 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"'
    done = docker.docker("exec", "-i", "-w", WORKDIR, container, "sh", "-c", script, "sh", path, data=data)
    return None if done.returncode == 0 else done.stderr.decode(errors="replace").strip()


def read(container: str, paths: list[str]) -> subprocess.Popen[bytes]:
    """One process whose stdout is, per path, a line ``F<size>`` then the file's bytes, or a
    line ``D`` (a directory) or ``N`` (missing), so the caller can stream them all."""
    script = (
        'for p; do if [ -d "$p" ]; then echo D; elif [ -f "$p" ]; then '
        'echo "F$(wc -c < "$p")"; cat -- "$p"; else echo N; fi; done'
    )
    return docker.popen(
        "exec",
        "-w",
        WORKDIR,
        container,
        "sh",
        "-c",
        script,
        "sh",
        *paths,
        stdin=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


# Exit codes of the scripts below for the daemon's answers: os.Stat's not-exist (404) and permission
# (403) errors, a directory without ``recursive`` (400); any other failure is also a 400.
_MISSING, _DENIED, _IS_DIR = 3, 13, 4
_STAT = (  # Go's os.Stat: links followed (a dangling one is missing), errno told apart by its text
    'out=$(stat -L -c "$1" -- "$2" 2>&1) || { case $out in *"No such file"*) exit 3;; '
    '*"ermission denied"*) exit 13;; esac; echo "$out" >&2; exit 1; }\n'
)
ANSWERS = {_MISSING: (404, "FILE_NOT_FOUND"), _DENIED: (403, "FILE_ACCESS_DENIED")}


def file_info(container: str, path: str) -> tuple[int, str]:
    """``stat -L`` of ``path`` inside the container (the daemon's ``os.Stat``): exit code 0 and
    ``<raw mode hex> <size> <uid> <gid> <mtime seconds.nanoseconds>``, or a code of ``ANSWERS`` (or
    1, with the error)."""
    script = _STAT + 'echo "$out"'
    done = docker.docker("exec", "-w", WORKDIR, container, "sh", "-c", script, "sh", "%f %s %u %g %.9Y", path)
    return done.returncode, (done.stdout if done.returncode == 0 else done.stderr).decode(errors="replace")


def delete(container: str, path: str, recursive: bool) -> tuple[int, str]:
    """The daemon's DeleteFile inside the container: ``os.Stat`` first (following links), a
    directory refused without ``recursive``, then ``os.RemoveAll`` (``rm -rf``: a link itself is
    removed, never entered) or ``os.Remove``. The exit code (see ``ANSWERS``) and any error."""
    script = _STAT + (
        '[ "$out" = directory ] && [ "$3" != true ] && exit 4\n'
        # os.RemoveAll takes the last element off its parent (trailing slashes dropped): a link
        'p=$2; while [ "${p%/}" != "$p" ] && [ "${p%/}" ]; do p=${p%/}; done\n'
        'if [ "$3" = true ]; then rm -rf -- "$p"; else rm -- "$2"; fi'
    )
    flag = "true" if recursive else "false"
    done = docker.docker("exec", "-w", WORKDIR, container, "sh", "-c", script, "sh", "%F", path, flag)
    return done.returncode, done.stderr.decode(errors="replace").strip()
