"""The dead-man's switch of a docker instance: its main process (``watchdog.sh``).

The container runs the watchdog instead of ``sleep infinity``; the watchdog exits once the
instance's ``Lifetime`` says so: nothing was active for its idle limit, or it is ``ttl_s`` old. The
container, created with ``auto_remove``, is then removed by the engine. So no instance
outlives its purpose even when its client was SIGKILLed and nothing else ever reaps it.

The watchdog is the instance's own process, so nothing of the user's may break it: it starts
with an environment of its own (``env -i``; the user's env reaches only their commands), under
bash where the image has it (its ``read -t`` waits without forking, which a fork bomb would
refuse), and it never ends because a fork failed (see the script).
"""

from __future__ import annotations

import math
from importlib import resources

from praisonai._lifetime import Lifetime
from praisonai.compute.base import SYSTEM_PATH
from praisonai.compute.session_guard import guarded_session as guarded_session  # shared with kubernetes

WATCHDOG = resources.files("praisonai.compute.providers.docker").joinpath("watchdog.sh").read_text()

# sh -c LAUNCH name SCRIPT name ARGS...: run SCRIPT (with its name and ARGS) cleanly, as above.
_LAUNCH = (
    f"PATH={SYSTEM_PATH}; unset BASH_ENV ENV; s=/bin/sh; "
    'for b in /bin/bash /usr/bin/bash; do if [ -x "$b" ]; then s=$b; break; fi; done; '
    'if command -v env >/dev/null 2>&1; then exec env -i PATH="$PATH" "$s" -c "$@"; fi; '
    'exec "$s" -c "$@"'
)


def watchdog_command(lifetime: Lifetime, spool: str) -> list[str]:
    """The container command that stops the instance by itself when ``lifetime`` says so.
    ``spool`` is where the exec helper leaves its activity markers."""
    name = "praisonai-watchdog"
    limits = (_whole_seconds(lifetime.idle_limit_s), _whole_seconds(lifetime.ttl_s))
    return ["/bin/sh", "-c", _LAUNCH, name, WATCHDOG, name, *limits, spool]


def _whole_seconds(limit: float | None) -> str:
    """A limit as watchdog.sh takes it: whole seconds, rounded up (it counts seconds), 0 for none."""
    return "0" if limit is None else str(math.ceil(limit))
