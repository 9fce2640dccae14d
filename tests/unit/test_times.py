"""The one duration rule every front end shows (``compute ps``, ``env captures``, the dashboard),
and the one size rule (``compute snapshots``, the dashboard's snapshots page)."""

from __future__ import annotations

import pytest

from praisonai._times import duration, size

CASES = [
    (None, "?"),
    (-5.0, "0s"),  # a clock a little behind the instance's
    (0, "0s"),
    (0.999, "0s"),
    (59.999, "59s"),
    (60, "1m"),
    (3599, "59m"),
    (3600, "1h00m"),
    (7530, "2h05m"),
    (86399, "23h59m"),
    (86400, "1d00h"),
    (91800, "1d01h"),
    (40 * 86400 + 23 * 3600 + 3599, "40d23h"),
]


@pytest.mark.parametrize(("seconds", "text"), CASES)
def test_a_duration_reads_in_its_largest_unit_with_the_next_from_an_hour_up(
    seconds: float | None, text: str
) -> None:
    assert duration(seconds) == text


@pytest.mark.parametrize(
    ("nbytes", "text"),
    [
        (None, "?"),
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1.0 KiB"),
        (3 * 2**20 + 2**19, "3.5 MiB"),
        (2**41, "2.0 TiB"),
    ],
)
def test_a_size_reads_in_the_largest_binary_unit_that_fits(nbytes: int | None, text: str) -> None:
    assert size(nbytes) == text
