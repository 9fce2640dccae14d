"""``praisonai managed diff``: what a session's agent changed in its workspace, as a patch."""

from __future__ import annotations

import sys

from praisonai.cli.managed.describe import clean
from praisonai.cli.managed.sessions import SessionArg


def diff(session_id: SessionArg) -> None:
    """Print the changes a session's agent made to the workspace it was given (--workspace or
    --repo) since the upload or clone, as a git diff patch: edits, new and deleted files,
    .gitignore honoured. Piped, the patch is exact (git apply takes it); on a terminal,
    control characters are removed.

    Examples:

    \b
      praisonai managed diff msess_0123...
      praisonai managed diff msess_0123... | git apply
    """
    from praisonai.managed import sessions

    patch = sessions.session_diff(session_id)
    sys.stdout.write(clean(patch) if sys.stdout.isatty() else patch)
