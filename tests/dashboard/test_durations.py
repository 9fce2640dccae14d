"""The dashboard shows an instance's durations as ``compute ps`` prints them: the same survey
read by both gives the same text (the server writes it; the page formats none itself)."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect
from typer.testing import CliRunner

from praisonai._lifetime import Lifetime
from praisonai.cli import compute as compute_cli
from praisonai.compute import inventory
from praisonai.compute.inventory import Instance
from praisonai.dashboard import Dashboard

# (age, idle, ttl left) in seconds, each in the middle of the unit it is shown in, so that the
# moments between the survey and the reading change no text; None: not known, or no ttl.
AGES = {
    "docker_00000000000a": ((150.0, 75.0, None), ("2m", "1m", "")),
    "docker_00000000000b": ((7530.0, 7530.0, 10830.0), ("2h05m", "2h05m", "3h00m")),
    "docker_00000000000c": ((91800.0, None, 30.0 * 86400 + 1800), ("1d01h", "?", "30d00h")),
    "docker_00000000000d": ((None, None, None), ("?", "?", "")),
}


@pytest.fixture
def surveyed(monkeypatch: pytest.MonkeyPatch) -> None:
    """``compute ps`` and the dashboard both find the instances of :data:`AGES`, made now."""
    now = time.time()

    def instance(instance_id: str, age: float | None, idle: float | None, left: float | None) -> Instance:
        created = 0.0 if age is None else now - age
        return Instance(
            instance_id=instance_id,
            provider_name="docker",
            status="running",
            created_at=created,
            owner="someone",
            endpoint="",
            provider=None,
            last_active=0.0 if idle is None else now - idle,
            lifetime=None if left is None else Lifetime(ttl_s=(age or 0) + left),
        )

    found = tuple(instance(i, *seconds) for i, (seconds, _) in AGES.items())
    monkeypatch.setattr(inventory, "ps", lambda: inventory.Survey(instances=found, problems=()))


def _cli_ages() -> dict[str, str]:
    """The age column of ``praisonai compute ps``."""
    printed = CliRunner().invoke(compute_cli.app, ["ps"])
    assert printed.exit_code == 0, printed.output
    rows = [line.split() for line in printed.output.splitlines()[1:]]
    return {row[0]: row[3] for row in rows}


def _api_rows(board: Dashboard) -> dict[str, dict[str, Any]]:
    cookie = {f"praisonai_dashboard_{board.port}": board.access.cookie_value}
    key = {"x-praisonai-token": board.access.header_token}
    url = f"http://127.0.0.1:{board.port}/api/instances"
    listed = httpx.get(url, cookies=cookie, headers=key, timeout=60).json()["instances"]
    return {row["instance"]: row for row in listed}


@pytest.mark.usefixtures("surveyed")
def test_the_api_sends_the_text_compute_ps_prints(dashboard: Dashboard) -> None:
    printed, rows = _cli_ages(), _api_rows(dashboard)
    for instance_id, (_, shown) in AGES.items():
        row = rows[instance_id]
        assert printed[instance_id] == shown[0]
        assert (row["age"], row["idle"], row["ttl_left"]) == shown


@pytest.mark.usefixtures("surveyed")
def test_the_page_shows_the_text_compute_ps_prints(page: Any) -> None:
    printed = _cli_ages()
    for instance_id, (_, (age, idle, ttl_left)) in AGES.items():
        assert printed[instance_id] == age
        cells = page.locator(f'#instances tr[data-instance="{instance_id}"] td')
        expect(cells.nth(4)).to_have_text(age)
        expect(cells.nth(5)).to_have_text(idle)
        expect(cells.nth(6)).to_have_text(ttl_left)
