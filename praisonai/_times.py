"""Durations, moments and sizes as a person reads them, written once for every front end: what
``praisonai compute ps`` prints is what the dashboard shows (its JSON sends this text beside the
number, so the page formats nothing itself)."""

from __future__ import annotations

import time


def duration(seconds: float | None) -> str:
    """``12s``, ``4m``, ``2h05m``, ``3d04h``: whole seconds (the fraction dropped, below zero
    counts as zero) in the largest unit that fits, and from an hour up the next unit as two
    digits; ``?`` when it is not known (``None``)."""
    if seconds is None:
        return "?"
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def when(at: float | None, *, short: bool = False) -> str:
    """A moment in local time (``""`` for none); ``short``: the time alone today, else the day
    and minute."""
    if not at:
        return ""
    moment = time.localtime(at)
    if not short:
        return time.strftime("%Y-%m-%d %H:%M:%S", moment)
    today = time.localtime()[:3] == moment[:3]
    return time.strftime("%H:%M:%S" if today else "%b %d %H:%M", moment)


def size(nbytes: int | None) -> str:
    """``512 B``, ``3.4 MiB``: bytes in the largest binary unit that fits; ``?`` when it is not
    known (``None``)."""
    if nbytes is None:
        return "?"
    shown, unit = float(nbytes), "B"
    for larger in ("KiB", "MiB", "GiB", "TiB"):
        if shown < 1024:
            break
        shown, unit = shown / 1024, larger
    return f"{shown:.0f} {unit}" if unit == "B" else f"{shown:.1f} {unit}"
