"""What every benchmark script shares: timing one call, percentiles, and saving results."""

from __future__ import annotations

import json
import math
import os
import platform
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).parent / "results"


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
