"""``praisonai dashboard``: a local web console over the same library the CLI uses.

Pages: the instances of every provider and home (``compute ps``), an instance's snapshots (taken,
forked, restored, removed), sessions as a tree of their forks and their timelines (``managed
sessions``, forked at a turn), a terminal into an instance and its files. It listens on loopback only,
on a random port, behind a one-time token (:mod:`praisonai.dashboard._guard` says what each
request must show). Needs the ``dashboard`` extra: ``pip install 'praisonai[dashboard]'``.

    with Dashboard() as board:       # serves in a thread until the with ends
        print(board.url)             # http://127.0.0.1:PORT/?token=...
"""

from __future__ import annotations

from praisonai.dashboard._http import ClientLimits as ClientLimits
from praisonai.dashboard._server import Dashboard as Dashboard

__all__ = ["ClientLimits", "Dashboard"]
