"""Who a docker instance's commands run as: apart from its exec helper, watchdog and main channel
(root, as E2B's envd), the user's commands, sessions, terminals and background processes run as
``COMMAND_UID`` (the sandbox image's ``user``), so none of them can see into, signal or trace the
helper, open its fds or memory, or write its spool (helper.sh). ``ComputeConfig.command_user``
``"root"`` gives that up. The rules are ``compute.users``'s (shared with Fly and Tenki); the
choice is the container's label, read back by any process that opens a channel to it, so a
channel never starts without it: it fails closed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from praisonai.compute.providers.docker._exec import own_shell
from praisonai.compute.users import (
    COMMAND_UID,
    HAND_OVER,
    LABEL_COMMAND_USER,
    command_user,
    dropped,
    labelled,
)
from praisonai.compute.users import user_of as _labelled_user


def user_of(inspected: Mapping[str, Any]) -> str | None:
    """The command user an inspected container was made with (its label)."""
    return _labelled_user((inspected.get("Config") or {}).get("Labels") or {})


def session(spool: str, user: str | None, argv: list[str]) -> list[str]:
    """A session shell's ``argv``, as ``user``, under its guard (``watchdog.guarded_session``)."""
    from praisonai.compute.watchdog import guarded_session

    return guarded_session(spool, dropped(user, own_shell(argv)), user)


__all__ = [
    "COMMAND_UID",
    "HAND_OVER",
    "LABEL_COMMAND_USER",
    "command_user",
    "dropped",
    "labelled",
    "session",
    "user_of",
]
