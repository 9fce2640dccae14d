"""One instance as an object: :class:`AsyncSandbox` and its sync twin :class:`Sandbox`."""

from praisonai._types import FileEntry
from praisonai.sandbox._async import AsyncSandbox
from praisonai.sandbox._files import AsyncFiles, Files
from praisonai.sandbox._sync import Sandbox

__all__ = ["AsyncFiles", "AsyncSandbox", "FileEntry", "Files", "Sandbox"]
