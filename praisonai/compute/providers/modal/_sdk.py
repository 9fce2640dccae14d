"""The modal SDK at the boundary: imported lazily, its exceptions turned into ours (one sentence)."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator
from typing import Any

from praisonai import _telemetry
from praisonai._errors import (
    AuthenticationError,
    ConfigError,
    InstanceNotFoundError,
    MissingDependencyError,
    PathNotFoundError,
    ProviderUnavailableError,
    ProvisionError,
)
from praisonai._files import check_regular_file


def load() -> Any:
    """The ``modal`` module. Importing it reads the Modal config file (``MODAL_CONFIG_PATH``,
    else ~/.modal.toml): a FIFO there would hang the import, so it is checked first, and a
    file modal cannot read is one sentence, not modal's multi-line ``InvalidError``."""
    config = _config_path()
    if os.path.lexists(config) and not os.environ.get("MODAL_IS_REMOTE"):
        try:
            check_regular_file(config, "the Modal config")
        except OSError as exc:
            raise ConfigError(f"the Modal config {config} cannot be read: {exc.strerror or exc}") from None
    try:
        # On a failed import modal prints a banner asking to email its support: not ours to show.
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            import modal
    except ImportError as exc:
        raise MissingDependencyError(
            "the modal provider needs the modal SDK: pip install 'praisonai[modal]'", op="import"
        ) from exc
    except Exception as exc:  # modal.exception.InvalidError, raised by the import itself
        why = " ".join(str(exc).split()).removeprefix(
            f"Error when reading the modal configuration from `{config}`. "
        )
        raise ConfigError(
            f"the Modal config {config} is not valid ({why[:200]}); fix it, or set MODAL_CONFIG_PATH "
            f"to a valid one",
            op="config",
        ) from exc
    return modal


def _config_path() -> str:
    return os.environ.get("MODAL_CONFIG_PATH") or os.path.expanduser("~/.modal.toml")


def credentials_reason() -> str | None:
    """Why no Modal credential is visible, or ``None`` when one may be (the variables, or a config
    file, whatever it is: :func:`load` says when it cannot be read)."""
    if os.environ.get("MODAL_TOKEN_ID") and os.environ.get("MODAL_TOKEN_SECRET"):
        return None
    if os.path.lexists(_config_path()):
        return None
    return "no Modal credentials: set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET (or run `modal token new`)"


@contextlib.contextmanager
def translated(op: str, what: str = "") -> Iterator[None]:
    """Modal's exceptions as ours, the original chained."""
    modal = load()
    exc_mod = modal.exception
    _telemetry.vendor_call("modal", op, what)
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
