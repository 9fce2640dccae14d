"""``python -m praisonai.compute.warm POOL_ID LOCK_FD``: one refill of a shared warm pool, started
detached by a claimer (``_fill.start_refill``) holding the pool's lock as ``LOCK_FD``."""

import sys

import anyio

from praisonai.compute.warm._fill import refill

if len(sys.argv) != 3 or not all(arg.isdigit() for arg in sys.argv[1:]):
    sys.exit("usage: python -m praisonai.compute.warm POOL_ID LOCK_FD (started by a warm claim)")
anyio.run(refill, int(sys.argv[1]), int(sys.argv[2]))
