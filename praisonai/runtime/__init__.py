"""The persistent exec channel into an instance: a POSIX-sh helper and its host side."""

from praisonai.runtime.channel import Channel, helper_argv
from praisonai.runtime.transport import ProcessTransport, Transport

__all__ = ["Channel", "ProcessTransport", "Transport", "helper_argv"]
