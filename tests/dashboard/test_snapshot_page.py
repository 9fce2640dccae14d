"""An instance's snapshots page, in a real browser over real local and docker instances: take a
snapshot, roll the instance back to it (local does, in place; docker says in its own sentence that
it cannot), start a new instance from it, remove it. Then its routes asked as an attacker would:
from another site, without the page's key, with another home's or another provider's snapshot, and
a hostile snapshot name in the home's ledger, which the page shows as text and never runs. Every
test shuts down the instances of its home and removes its snapshots, also when it fails."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from praisonai import Sandbox
from praisonai._ledger import Ledger
from praisonai.compute import inventory, list_snapshots, remove_snapshot
from praisonai.dashboard import Dashboard

HOSTILE = "<img src=x onerror=window.pwned=1><script>window.pwned=2</script>"


def _clean() -> None:
    """Every instance of this test's home first (docker keeps an image its container runs from),
    then every snapshot."""
    made = [entry.instance_id for entry in Ledger.default().entries()]
    if made:
        inventory.stop(made)
    for snapshot in list_snapshots():
        remove_snapshot(snapshot)


@pytest.fixture
def local(home: Path) -> Iterator[Sandbox]:
    try:
        with Sandbox.create("local") as sandbox:
            yield sandbox
    finally:
        _clean()


@pytest.fixture
def docker(home: Path, docker_ok: None) -> Iterator[Sandbox]:
    try:
        with Sandbox.create("docker") as sandbox:
            yield sandbox
    finally:
        _clean()


def _open(page: Any, board: Dashboard, instance: Sandbox) -> None:
    page.goto(f"http://127.0.0.1:{board.port}/#/instances/{instance.id}/snapshots")
    expect(page.locator("#snapshots")).to_be_visible()


def _take(page: Any, name: str) -> str:
    """Click Snapshot with ``name``; the new snapshot's id, as its row shows it."""
    page.locator("#snapshot-name").fill(name)
    page.locator("#snapshot").click()
    expect(page.locator("#snapshot-outcome")).to_contain_text(f"({name}) taken")
    row = page.locator("#snapshots tbody tr", has_text=name)
    expect(row).to_have_count(1)
    return str(row.get_attribute("data-snapshot"))


def test_local_snapshot_restore_fork_and_remove_from_the_page(
    page: Any, dashboard: Dashboard, local: Sandbox
) -> None:
    local.write_file("state.txt", "before")
    _open(page, dashboard, local)
    expect(page.locator("#snapshots tbody tr")).to_have_count(0)
    snapshot_id = _take(page, "before")
    row = page.locator(f'#snapshots tr[data-snapshot="{snapshot_id}"]')
    expect(row).to_contain_text("0s")
    expect(row).to_contain_text("6 B")  # its size, as `compute snapshots` prints it
    local.write_file("state.txt", "after")

    row.locator("button.restore").click()  # the first click asks
    assert local.read_file("state.txt") == b"after"
    row.locator("button.restore.confirm").click()
    expect(page.locator("#snapshot-outcome")).to_have_text(f"{local.id} restored to {snapshot_id}")
    assert local.read_file("state.txt") == b"before"

    row.locator("button.fork").click()
    expect(page.locator("#forked-instance")).to_be_visible()
    forked = page.locator("#forked-instance").inner_text()
    assert forked != local.id
    with Sandbox.connect(forked) as fork:
        assert fork.read_file("state.txt") == b"before"
    inventory.stop([forked])  # before its snapshot goes, as a user would

    row.locator("button.remove").click()
    row.locator("button.remove.confirm").click()
    expect(page.locator("#snapshot-outcome")).to_have_text(f"removed {snapshot_id}")
    expect(page.locator("#snapshots tbody tr")).to_have_count(0)
    assert list_snapshots() == []


@pytest.mark.docker
def test_docker_forks_from_the_page_and_its_restore_says_why_it_cannot(
    page: Any, dashboard: Dashboard, docker: Sandbox
) -> None:
    docker.write_file("state.txt", "kept")
    _open(page, dashboard, docker)
    snapshot_id = _take(page, "docker-one")
    row = page.locator(f'#snapshots tr[data-snapshot="{snapshot_id}"]')
    row.locator("button.restore").click()
    row.locator("button.restore.confirm").click()
    outcome = page.locator("#snapshot-outcome")
    expect(outcome).to_contain_text(f"docker cannot roll instance {docker.id} back in place")
    expect(outcome).to_have_class("bad")
    assert "Traceback" not in outcome.inner_text()
    row.locator("button.fork").click()
    expect(page.locator("#forked-instance")).to_be_visible()
    forked = page.locator("#forked-instance").inner_text()
    assert forked.startswith("docker_") and forked != docker.id
    with Sandbox.connect(forked) as fork:
        assert fork.read_file("state.txt") == b"kept"
    row.locator("button.remove").click()
    row.locator("button.remove.confirm").click()  # its fork still runs from it: docker keeps it
    expect(outcome).to_have_text(
        f"snapshot {snapshot_id} is in use by instances started from it; shut them down first"
    )
    expect(outcome).to_have_class("bad")
    assert [s.id for s in list_snapshots()] == [snapshot_id]


def test_a_hostile_name_in_the_ledger_is_shown_as_text_and_never_runs(
    page: Any, dashboard: Dashboard, local: Sandbox
) -> None:
    """Any process of the home writes the ledger (and a vendor's snapshot may carry names its API
    gave): the names the library lets through are harmless, this one is not."""
    taken = local.snapshot("plain")
    Ledger.default().execute("UPDATE snapshots SET name = ? WHERE id = ?", (HOSTILE, taken.id))
    _open(page, dashboard, local)
    row = page.locator(f'#snapshots tr[data-snapshot="{taken.id}"]')
    expect(row).to_contain_text(HOSTILE)
    assert page.locator("#snapshots img, #snapshots script").count() == 0
    page.locator("#snapshot-name").fill(HOSTILE)  # typed: refused in one sentence, shown as text
    page.locator("#snapshot").click()
    expect(page.locator("#snapshot-outcome")).to_contain_text("is not a snapshot name")
    expect(page.locator("#snapshot-outcome")).to_contain_text(HOSTILE)
    assert page.locator("#page img, #page script").count() == 0
    assert page.evaluate("window.pwned") is None


# ---- the routes, asked as an attacker would --------------------------------------------------


def _ask(
    board: Dashboard, method: str, path: str, *, key: bool = True, origin: str | None = None, **kw: Any
) -> httpx.Response:
    cookie = {f"praisonai_dashboard_{board.port}": board.access.cookie_value}
    headers = {"x-praisonai-token": board.access.header_token} if key else {}
    if origin is not None:
        headers["origin"] = origin
    url = f"http://127.0.0.1:{board.port}{path}"
    return httpx.request(method, url, cookies=cookie, headers=headers, timeout=60, **kw)


def _changes(sandbox: Sandbox, snapshot_id: str) -> list[tuple[str, str, dict[str, Any] | None]]:
    """Every route of this page that changes something, aimed at ``sandbox`` and ``snapshot_id``."""
    return [
        ("POST", f"/api/instances/{sandbox.id}/snapshots", {"name": "forged"}),
        ("POST", f"/api/instances/{sandbox.id}/restore", {"snapshot": snapshot_id}),
        ("POST", f"/api/snapshots/{snapshot_id}/fork", None),
        ("DELETE", f"/api/snapshots/{snapshot_id}", None),
    ]


def test_a_cross_site_request_or_one_without_the_key_changes_nothing(
    dashboard: Dashboard, local: Sandbox
) -> None:
    taken = local.snapshot("mine")
    local.write_file("state.txt", "current")
    own = f"http://127.0.0.1:{dashboard.port}"
    for method, path, body in _changes(local, taken.id):
        bare = _ask(dashboard, method, path, key=False, json=body)  # a form post riding the cookie
        assert bare.status_code == 403 and "x-praisonai-token" in bare.text, path
        for origin in ("http://evil.example", "null", f"http://127.0.0.1:{dashboard.port + 1}"):
            forged = _ask(dashboard, method, path, origin=origin, json=body)
            assert forged.status_code == 403 and "another site" in forged.text, (path, origin)
        no_cookie = httpx.request(method, own + path, json=body, timeout=30)
        assert no_cookie.status_code == 403, path
    assert [s.id for s in list_snapshots()] == [taken.id]  # nothing taken, forked or removed
    assert [e.instance_id for e in Ledger.default().entries()] == [local.id]
    assert local.read_file("state.txt") == b"current"  # nor restored


def test_another_homes_snapshot_is_not_found_and_stays(
    dashboard: Dashboard, local: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine = os.environ["PRAISONAI_HOME"]
    monkeypatch.setenv("PRAISONAI_HOME", str(tmp_path / "other-home"))
    try:
        with Sandbox.create("local") as theirs:
            taken = theirs.snapshot("theirs")
        monkeypatch.setenv("PRAISONAI_HOME", mine)
        for method, path, body in _changes(local, taken.id)[1:]:
            refused = _ask(dashboard, method, path, json=body)
            assert refused.status_code == 404, path
            assert refused.text == (
                f"no snapshot {taken.id!r} in this home; `praisonai compute snapshots` (or "
                "praisonai.compute.list_snapshots()) lists them"
            )
        assert [e.instance_id for e in Ledger.default().entries()] == [local.id]  # no fork made
    finally:
        monkeypatch.setenv("PRAISONAI_HOME", str(tmp_path / "other-home"))
        assert [s.name for s in list_snapshots()] == ["theirs"]  # still there: nothing removed it
        _clean()
        monkeypatch.setenv("PRAISONAI_HOME", mine)


@pytest.mark.docker
def test_another_providers_snapshot_is_refused_and_the_instance_is_unchanged(
    dashboard: Dashboard, local: Sandbox, docker_ok: None
) -> None:
    with Sandbox.create("docker") as other:
        other.write_file("state.txt", "docker's")
        taken = local.snapshot("local-one")
        refused = _ask(dashboard, "POST", f"/api/instances/{other.id}/restore", json={"snapshot": taken.id})
        assert refused.status_code == 400
        assert refused.text == (
            f"snapshot {taken.id!r} is a local snapshot; only the local provider starts from it, not docker"
        )
        assert other.read_file("state.txt") == b"docker's"


def test_bad_input_is_one_sentence_and_makes_nothing(dashboard: Dashboard, local: Sandbox) -> None:
    taken = local.snapshot("kept")
    gone = "local_0123456789ab"
    nowhere = f"no instance {gone!r} to"
    cases = [
        ("POST", f"/api/instances/{gone}/snapshots", {"name": None}, 404, f"{nowhere} snapshot"),
        ("POST", f"/api/instances/{gone}/restore", {"snapshot": taken.id}, 404, f"{nowhere} restore"),
        ("POST", "/api/instances/not-an-id/snapshots", {}, 400, "'not-an-id'"),
        ("POST", f"/api/instances/{local.id}/restore", {}, 400, "name the snapshot to restore"),
        ("POST", f"/api/instances/{local.id}/restore", {"snapshot": ["x"]}, 400, "name the snapshot"),
        ("POST", f"/api/instances/{local.id}/snapshots", {"name": "kept"}, 400, "exists already"),
        ("POST", f"/api/instances/{local.id}/snapshots", {"name": 7}, 400, "is not a snapshot name"),
        ("POST", "/api/snapshots/snap_000000000000/fork", None, 404, "no snapshot 'snap_000000000000'"),
        ("DELETE", "/api/snapshots/nothing-here", None, 404, "no snapshot 'nothing-here'"),
    ]  # fmt: skip
    for method, path, body, status, sentence in cases:
        answer = _ask(dashboard, method, path, json=body)
        assert (answer.status_code, sentence in answer.text) == (status, True), (path, answer.text)
        assert "\n" not in answer.text.strip() and "Traceback" not in answer.text
    not_json = _ask(dashboard, "POST", f"/api/instances/{local.id}/snapshots", content=b"[1]")
    assert not_json.status_code == 400 and "JSON object" in not_json.text
    assert [s.id for s in list_snapshots()] == [taken.id]
    assert [e.instance_id for e in Ledger.default().entries()] == [local.id]
