"""The persistent exec channel into an instance: a POSIX-sh helper and its host side.

Names are imported on first use: a one-shot run reaches ``runtime.transport`` (through the
activity stamps) without loading the channel, which only a live instance's exec needs.
"""

from typing import TYPE_CHECKING

from praisonai._lazy import lazy_exports

_EXPORTS = {
    "Channel": "praisonai.runtime.channel",
    "helper_argv": "praisonai.runtime.channel",
    "ProcessTransport": "praisonai.runtime.transport",
    "Transport": "praisonai.runtime.transport",
    "Waiter": "praisonai.runtime._waiter",
    "descendants": "praisonai.runtime._keeper",
}

__all__ = ["Channel", "ProcessTransport", "Transport", "Waiter", "descendants", "helper_argv"]

if TYPE_CHECKING:
    from praisonai.runtime._keeper import descendants as descendants
    from praisonai.runtime._waiter import Waiter as Waiter
    from praisonai.runtime.channel import Channel as Channel
    from praisonai.runtime.channel import helper_argv as helper_argv
    from praisonai.runtime.transport import ProcessTransport as ProcessTransport
    from praisonai.runtime.transport import Transport as Transport

__getattr__ = lazy_exports(__name__, _EXPORTS)
