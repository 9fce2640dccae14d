"""``python -m praisonai.compute.warm POOL_ID LOCK_FD``: one refill of a shared warm pool, started
detached by a claimer (``_fill.start_refill``) holding the pool's lock as ``LOCK_FD``. Its stderr
is ``$PRAISONAI_HOME/warm-refill.log``: a failed refill writes one line there and exits 1."""

import sys
import time

import anyio

from praisonai.compute.warm._fill import refill

if len(sys.argv) != 3 or not all(arg.isdigit() for arg in sys.argv[1:]):
    sys.exit("usage: python -m praisonai.compute.warm POOL_ID LOCK_FD (started by a warm claim)")
try:
    anyio.run(refill, int(sys.argv[1]), int(sys.argv[2]))
except Exception as exc:  # the pool stays short; the next claim or `compute warm` tries again
    when = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    sys.exit(f"{when} refill of warm pool {sys.argv[1]} failed: {type(exc).__name__}: {exc}")
