"""Whether bubblewrap can make a sandbox on this machine: installed is not enough (a container
or a kernel may forbid user namespaces or mounts), so it is tried once per process."""

from __future__ import annotations

import functools
import shutil
import subprocess

from praisonai._limits import BWRAP_PROBE_TIMEOUT_S

NOT_INSTALLED = "isolation needs bubblewrap, which is not installed (apt-get install bubblewrap)"


def bwrap_problem() -> str | None:
    """Why an isolated local instance cannot run here (one sentence), or ``None`` when it can.
    ``bwrap`` is looked up on this process's ``PATH``."""
    path = shutil.which("bwrap")
    return NOT_INSTALLED if path is None else _tried(path)


@functools.cache
def _tried(path: str) -> str | None:
    """Run ``/bin/true`` in the namespaces an instance's commands get (the same ``--unshare-all``,
    no capability, ``/proc`` and ``/dev``); the answer is kept for the process's life."""
    argv = [
        path,
        "--die-with-parent",
        "--unshare-all",
        "--cap-drop",
        "ALL",
        "--ro-bind",
        "/",
        "/",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "/bin/true",
    ]
    try:
        done = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=BWRAP_PROBE_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap ({path}) cannot make a sandbox here: {exc}"
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        why = said[0] if said else f"it exited {done.returncode}"
        return f"bubblewrap ({path}) cannot make a sandbox here: {why}"
    return None
