"""The helper run once, for one request: for instances reached by a one-shot exec only.

:func:`one_shot` gives the ``sh`` command to run and the env to run it with; the helper script
and the request travel in that env (never on the command line) and are unset before the helper
starts, so nothing it runs inherits them. :meth:`OneShot.reply` reads the answer from the exec's
stdout. The helper exits at the end of its input; what it started in the background lives on.
"""

from __future__ import annotations

import dataclasses
import shlex

from praisonai.runtime._wire import PendingReply, ReplyParser, new_nonce, request_line
from praisonai.runtime.channel import HELPER

_COMMAND = (
    "h=$PRAISONAI_HELPER r=$PRAISONAI_REQUEST; unset PRAISONAI_HELPER PRAISONAI_REQUEST; "
    'printf %s "$r" | sh -c "$h" praisonai-helper {spool} {ready} one-shot {user}'
)


@dataclasses.dataclass(frozen=True)
class OneShot:
    """One request to a helper started for it alone."""

    command: str
    env: dict[str, str]
    _nonces: tuple[str, str]

    def reply(self, stdout: bytes) -> tuple[str, bytes] | None:
        """The request's (status, body) from the exec's stdout; ``None`` if it never came."""
        replies: list[tuple[str, bytes]] = []

        def keep(status: str | BaseException, body: bytes) -> None:
            replies.append((str(status), body))

        parser = ReplyParser()
        for nonce in self._nonces:  # the helper's hello, then the request's reply
            parser.expect(PendingReply(nonce.encode(), keep))
        parser.feed(stdout)
        return replies[1] if len(replies) == 2 else None


def one_shot(spool: str, function: str, *args: str, user: str | None = None) -> OneShot:
    """Run helper ``function(*args)`` once, with ``spool`` as the helper's spool; ``user``
    (``"UID:GID"``): the processes it starts run as that uid, apart from it (helper.sh)."""
    ready, nonce = new_nonce(), new_nonce()
    command = _COMMAND.format(spool=shlex.quote(spool), ready=ready, user=shlex.quote(user or ""))
    env = {"PRAISONAI_HELPER": HELPER, "PRAISONAI_REQUEST": request_line(function, nonce, *args).decode()}
    return OneShot(command, env, (ready, nonce))
