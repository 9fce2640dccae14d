"""The modal SDK at the boundary: imported lazily, its exceptions turned into ours (one sentence)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from praisonai._errors import (
    AuthenticationError,
    ConfigError,
    InstanceNotFoundError,
    MissingDependencyError,
    PathNotFoundError,
    ProviderUnavailableError,
    ProvisionError,
)


def load() -> Any:
    try:
        import modal
    except ImportError as exc:
        raise MissingDependencyError(
            "the modal provider needs the modal SDK: pip install 'praisonai[modal]'", op="import"
        ) from exc
    return modal


def credentials_reason() -> str | None:
    """Why no Modal credential is visible, or ``None`` when one is."""
    if os.environ.get("MODAL_TOKEN_ID") and os.environ.get("MODAL_TOKEN_SECRET"):
        return None
    config = Path(os.environ.get("MODAL_CONFIG_PATH") or Path.home() / ".modal.toml")
    if config.is_file():
        return None
    return "no Modal credentials: set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET (or run `modal token new`)"


@contextlib.contextmanager
def translated(op: str, what: str = "") -> Iterator[None]:
    """Modal's exceptions as ours, the original chained."""
    modal = load()
    exc_mod = modal.exception
    try:
        yield
    except exc_mod.NotFoundError as exc:
        raise InstanceNotFoundError(f"no Modal sandbox {what}".strip(), op=op) from exc
    except exc_mod.SandboxFilesystemNotFoundError as exc:
        raise PathNotFoundError(f"no such file in the sandbox: {what}", op=op) from exc
    except exc_mod.SandboxFilesystemIsADirectoryError as exc:
        raise IsADirectoryError(f"{what} is a directory") from exc
    except exc_mod.AuthError as exc:
        raise AuthenticationError(
            "Modal refused the credentials: check MODAL_TOKEN_ID and MODAL_TOKEN_SECRET", op=op
        ) from exc
    except exc_mod.ResourceExhaustedError as exc:
        raise ProvisionError(f"Modal quota or rate limit reached ({exc}); retry later", op=op) from exc
    except exc_mod.InvalidError as exc:
        raise ConfigError(f"Modal rejected the request: {exc}", op=op) from exc
    except exc_mod.ConnectionError as exc:
        raise ProviderUnavailableError(f"Modal is unreachable ({exc}); retry later", op=op) from exc
