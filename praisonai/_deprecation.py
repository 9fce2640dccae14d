"""Deprecation warnings that point at the user's line, however deep inside praisonai they start."""

from __future__ import annotations

import sys
import warnings


def warn_deprecated(message: str) -> None:
    """Warn ``DeprecationWarning`` at the first caller outside the praisonai package.

    The caller is found by walking the stack, not by a fixed ``stacklevel``: PraisonAI's SDK,
    which its users install beside us, replaces ``warnings.warn`` with a wrapper of its own, and
    that extra frame would make any fixed level point one frame short, inside praisonai.
    """
    frame = sys._getframe(1)
    while frame.f_back is not None and frame.f_globals.get("__name__", "").partition(".")[0] == "praisonai":
        frame = frame.f_back
    module_globals = frame.f_globals
    warnings.warn_explicit(
        message,
        DeprecationWarning,
        frame.f_code.co_filename,
        frame.f_lineno,
        module=module_globals.get("__name__"),
        registry=module_globals.setdefault("__warningregistry__", {}),
        module_globals=module_globals,
    )
