"""``python -m praisonai``: the ``praisonai`` command (it imports only what the command needs)."""

from praisonai.cli import main

main()
