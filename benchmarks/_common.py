"""What every benchmark script shares: timing one call, percentiles, saving results, and the
wire fakes (`fakes`, from tests/) on the import path."""

from __future__ import annotations

import json
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).parent / "results"

# The vendors' wire fakes live with the tests (tests/fakes, imported as `fakes`), not in the wheel:
# every benchmark that drives one finds them through this line.
sys.path.append(str(Path(__file__).resolve().parent.parent / "tests"))


async def timed(fn: Callable[[], Awaitable[Any]]) -> tuple[float, Any]:
    """(milliseconds, result) of one awaited call."""
    start = time.perf_counter()
    result = await fn()
    return (time.perf_counter() - start) * 1000, result


def p95(xs: list[float]) -> float:
    return sorted(xs)[max(0, math.ceil(0.95 * len(xs)) - 1)]


def summary(xs: list[float]) -> dict[str, Any]:
    return {"p50": statistics.median(xs), "p95": p95(xs), "samples_ms": xs}


def save(path: Path, meta: dict[str, Any], results: dict[str, Any]) -> None:
    """Write ``meta`` (plus the machine's basics) and ``results`` as JSON; say where."""
    path.parent.mkdir(parents=True, exist_ok=True)
    machine = {
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }
    path.write_text(json.dumps({**machine, **meta, "results": results}, indent=2))
    print(f"\nsaved {path}")


# ---- host memory of containers: the containerd shim and every process under it ----------------


def children() -> dict[int, list[int]]:
    """Every process's children, from ``/proc/*/stat``."""
    found: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        found.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    return found


def shims() -> dict[str, int]:
    """Every containerd shim's container id and pid, in one pass over ``/proc``."""
    found: dict[str, int] = {}
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if b"shim" in argv[0] and b"-id" in argv[:-1]:
            found[argv[argv.index(b"-id") + 1].decode()] = int(cmdline.parent.name)
    return found


def shim_of(container_id: str) -> int:
    """The pid of the containerd shim that runs ``container_id``."""
    pid = shims().get(container_id)
    if pid is None:
        raise LookupError(f"no shim for {container_id}")
    return pid


def pss_kib(root: int, tree: dict[int, list[int]]) -> int:
    """The PSS of ``root`` and all its descendants, in KiB."""
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo.extend(tree.get(pid, []))
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total


def idle_pss_mib(container_ids: list[str]) -> list[float]:
    """The PSS of each container's shim and every process under it, in MiB (its host memory;
    page cache and kernel memory are not counted)."""
    tree, by_id = children(), shims()
    return [pss_kib(by_id[cid], tree) / 1024 for cid in container_ids]
