"""Which host paths an instance may mount: the written list of what is refused without the caller's
explicit ``allow_host_mounts=True`` (CLI: ``--allow-host-mounts``).

A mount of the engine's socket, of ``/`` or of a host system directory hands the instance the
host, and a repository's environment.yaml is untrusted input: so a host path is refused when it
is, lies under, or contains (mounting ``/var`` shows ``/var/run/docker.sock``) one of

- the host system: :data:`SYSTEM_DIRS`;
- another user's home directory (every home in the password database but the caller's own);
- the caller's credential stores (:data:`CREDENTIAL_DIRS` in the home) and the praisonai home,
  which holds every instance's record and env;

and any unix socket (an engine's: docker, containerd, podman) or a path named ``*.sock``. The
path is checked as written and with its symlinks resolved on this machine (``os.path.realpath``
reads links, it opens nothing), so a link to one of those is refused too. An engine on another
host resolves the path there: only the written path can be checked for it.

A local engine is given the resolved path that was checked (:func:`resolve` once, then
:func:`as_checked` right before the container is made), never the path as written: a link
repointed after the check does not change what is mounted, and a checked path that has become a
link, or changed kind, is refused. What remains is the moment between that last look and the
engine's own resolution of the path (it takes a path, not a descriptor): a component of the
resolved path replaced in that moment by someone who can write its parent directory.
"""

from __future__ import annotations

import os
import pwd
import stat
from dataclasses import dataclass
from pathlib import PurePosixPath

from praisonai._errors import ConfigError
from praisonai._home import home_path

#: Host system directories (and what is below them) that no instance mounts without the opt-in.
SYSTEM_DIRS = (
    "/etc",
    "/proc",
    "/sys",
    "/dev",
    "/boot",
    "/root",
    "/run",
    "/var/run",
    "/var/lib/docker",
    "/var/lib/containerd",
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
)
#: Credential stores in the caller's own home.
CREDENTIAL_DIRS = (".ssh", ".gnupg", ".aws", ".azure", ".docker", ".kube", ".config", ".netrc")

OPT_IN = "pass allow_host_mounts=True (CLI: --allow-host-mounts) to mount it anyway"


@dataclass(frozen=True, slots=True)
class Resolved:
    """A host path as a check resolved it: ``path`` holds no link; ``is_dir`` was its kind then."""

    path: str
    is_dir: bool


def resolve(source: str) -> Resolved:
    """The host path ``source`` with its links resolved on this machine, and its kind."""
    real = os.path.realpath(os.path.normpath(source))
    return Resolved(real, os.path.isdir(real))


def as_checked(source: str, checked: Resolved) -> str:
    """``checked.path``, the path the check of ``source`` resolved, once seen unchanged: it
    still resolves to itself (no component became a link) and is still of its kind.

    Raises:
        ConfigError: it changed since the check (one sentence: what it is now, what to do).
    """
    now = resolve(checked.path)
    if now != checked:
        what = f"now resolves to {now.path}" if now.path != checked.path else "changed kind"
        raise ConfigError(
            f"mount of {source}: the host path {checked.path} changed since it was checked ({what}); "
            "nothing was made: check the path and provision again",
            op="provision",
        )
    return checked.path


def host_mount_refusal(source: str, real: str | None = None) -> str | None:
    """Why the host path ``source`` (absolute) may not be mounted without the opt-in, in a few
    words (``"… is the host system directory /etc"``), or ``None`` when it may. ``real``: its
    resolved path (:func:`resolve`), when the caller resolved it already: the one checked."""
    written = os.path.normpath(source)
    real = os.path.realpath(written) if real is None else real
    shown = written if real == written else f"{written} (a link to {real})"
    if "/" in (written, real):
        return f"{shown} is the host's whole filesystem"
    if _is_socket(real) or written.endswith(".sock") or real.endswith(".sock"):
        return f"{shown} is a unix socket of the host (an engine's socket hands over the host)"
    for path in {written, real}:
        for protected in _protected():
            if _overlaps(path, protected):
                return f"{shown} is or contains {protected}, {_what(protected)}"
    return None


def _protected() -> list[str]:
    home = os.path.expanduser("~")
    others = [
        entry.pw_dir
        for entry in pwd.getpwall()
        if entry.pw_uid != os.getuid() and entry.pw_dir not in ("", "/") and os.path.isdir(entry.pw_dir)
    ]
    own = [os.path.join(home, name) for name in CREDENTIAL_DIRS]
    return [*SYSTEM_DIRS, *others, *own, os.path.realpath(home_path())]


def _what(protected: str) -> str:
    if protected in SYSTEM_DIRS:
        return "a host system directory"
    if protected == os.path.realpath(home_path()):
        return "the praisonai home (every instance's record and env)"
    if os.path.dirname(protected) == os.path.expanduser("~"):
        return "a credential store of yours"
    return "another user's home directory"


def _overlaps(path: str, protected: str) -> bool:
    """``path`` is ``protected``, lies under it, or contains it."""
    a, b = PurePosixPath(path), PurePosixPath(protected)
    return a == b or b in a.parents or a in b.parents


def _is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:  # missing or unreadable: the provider reports a missing path itself
        return False
