"""How a local instance's programs start: a clean environment, a long command's private file,
bubblewrap's argv for an isolated instance, and the record of a process group kept until nothing
runs in it."""

from __future__ import annotations

import os
import shlex
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from praisonai._home import home_path
from praisonai.compute.base import SYSTEM_PATH
from praisonai.compute.providers.local._bwrap import bwrap_argv
from praisonai.compute.providers.local._process import INSTANCE_MARKER
from praisonai.compute.providers.local._record import Instance

#: Longest command passed to ``sh -c`` as one argv string; Linux refuses any single argument over
#: 128 KiB (MAX_ARG_STRLEN) with "Argument list too long".
ARGV_COMMAND_LIMIT = 64 * 1024


@contextmanager
def command_file(inst: Instance, command: str) -> Iterator[Path | None]:
    """``None`` when ``command`` fits in argv; else a private file holding it, removed after.

    The shell sources it (``. FILE``), so ``$0``, ``$@`` and ``exit`` mean what they mean in
    ``sh -c COMMAND``: any length runs, as it does on docker and SSH, where commands travel over
    the helper's channel rather than argv.
    """
    data = command.encode()
    if len(data) <= ARGV_COMMAND_LIMIT:
        yield None
        return
    folder = inst.root / "commands"  # private to the instance, removed with it
    folder.mkdir(mode=0o700, exist_ok=True)
    path = folder / f"{uuid.uuid4().hex}.sh"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data + b"\n")
        yield path
    finally:
        path.unlink(missing_ok=True)


def base_env(inst: Instance) -> dict[str, str]:
    """A clean environment: the instance's env over a minimal PATH/HOME/LANG, no host secrets,
    and the instance's marker (last: the config's env cannot take it away)."""
    home = inst.working_dir or str(inst.workspace)
    base = {"PATH": SYSTEM_PATH, "HOME": home, "LANG": "C.UTF-8"}
    return {**base, **inst.env, INSTANCE_MARKER: inst.instance_id}


def forget_if_empty(record: Path) -> None:
    """Drop a process group's record once nothing runs in it; a backgrounded child keeps it,
    so that shutdown still finds and kills it."""
    try:
        os.killpg(int(record.name), 0)
    except (ProcessLookupError, PermissionError):
        record.unlink(missing_ok=True)


def isolated_argv(inst: Instance, cwd: str | None, *, new_session: bool = True) -> list[str]:
    """bubblewrap's argv for a command of the isolated instance ``inst`` started in ``cwd`` (see
    ``bwrap_argv``)."""
    return bwrap_argv(
        root=inst.root,
        workspace=inst.workspace,
        working_dir=inst.working_dir,
        network=inst.network,
        cwd=cwd,
        new_session=new_session,
        hidden=(home_path(), inst.root.parent),  # every instance's record and workspace
    )


#: The exec helper's environment variable naming the program that starts each background process
#: (helper.sh: ``__p_box``).
SANDBOX_VARIABLE = "PRAISONAI_SANDBOX"


def sandbox_launcher(inst: Instance) -> Path:
    """A program (``sh``), ``LAUNCHER CWD ARGV...``, that runs ``ARGV`` in a new sandbox of the
    isolated instance ``inst``, starting in ``CWD`` as the sandbox sees it (a path there cannot
    lead out of it). The exec helper, outside every sandbox, starts background processes through
    it: each gets a pid namespace of its own, where neither the helper nor another call is.
    Rewritten (atomically) for each helper, so it follows the home's current layout."""
    script = (
        "#!/bin/sh\n"
        "# praisonai: runs a command of this instance in a sandbox of its own (see _launch.py)\n"
        "cwd=$1\n"
        "shift\n"
        f'exec {shlex.join(isolated_argv(inst, None))} --chdir "$cwd" "$@"\n'
    )
    path = inst.root / "sandbox"
    fresh = inst.root / f".sandbox-{uuid.uuid4().hex}"
    fd = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o700)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(script)
        os.replace(fresh, path)
    except BaseException:
        fresh.unlink(missing_ok=True)
        raise
    return path
