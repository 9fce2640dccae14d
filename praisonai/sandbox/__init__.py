"""One instance as an object: :class:`AsyncSandbox` and its sync twin :class:`Sandbox`."""

from praisonai.sandbox._async import AsyncSandbox
from praisonai.sandbox._sync import Sandbox

__all__ = ["AsyncSandbox", "Sandbox"]
