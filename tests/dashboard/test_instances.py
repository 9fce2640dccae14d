"""The instances page in a real browser over real docker instances: it follows instances as they
start and stop without a reload, and its stop buttons remove real containers."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from praisonai import Sandbox
from praisonai.dashboard import Dashboard

pytestmark = pytest.mark.docker


@pytest.fixture
def sandboxes(docker_ok: None) -> Iterator[list[Sandbox]]:
    """Instances a test makes (append to the list); each is removed at the end, stopped or not."""
    made: list[Sandbox] = []
    yield made
    for sandbox in made:
        sandbox.close()


def _containers(instance_id: str) -> list[Any]:
    import docker

    client = docker.from_env()
    try:
        return client.containers.list(all=True, filters={"label": f"praisonai.instance={instance_id}"})
    finally:
        client.close()


def _row(page: Any, instance_id: str) -> Any:
    return page.locator(f'#instances tr[data-instance="{instance_id}"]')


def test_the_list_follows_instances_as_they_start_and_stop(page: Any, sandboxes: list[Sandbox]) -> None:
    expect(page.locator("#page")).not_to_contain_text("Looking for instances")  # the first snapshot came
    page.evaluate("window.notReloaded = true")
    sandboxes.append(Sandbox.create("docker"))
    row = _row(page, sandboxes[0].id)
    expect(row).to_contain_text("running")
    expect(row).to_contain_text("docker")
    sandboxes[0].shutdown()
    expect(row).to_have_count(0)
    assert page.evaluate("window.notReloaded") is True  # the stream did it, not a reload


def test_stop_removes_the_instance_and_its_container(page: Any, sandboxes: list[Sandbox]) -> None:
    sandboxes.append(Sandbox.create("docker"))
    instance_id = sandboxes[0].id
    assert _containers(instance_id)
    page.locator(f'button[data-stop="{instance_id}"]').click()
    expect(_row(page, instance_id)).to_have_count(0)
    assert _containers(instance_id) == []


def test_stop_all_of_a_definition_stops_that_definition_alone(
    page: Any, dashboard: Dashboard, sandboxes: list[Sandbox]
) -> None:
    twin = {f"TWIN_{uuid.uuid4().hex}": "1"}  # a definition of this test's own
    sandboxes += [
        Sandbox.create("docker", env=twin),
        Sandbox.create("docker", env=twin),
        Sandbox.create("docker"),
    ]
    twins, other = sandboxes[:2], sandboxes[2]
    rows = {row["instance"]: row for row in _get(dashboard, "/api/instances").json()["instances"]}
    definition = rows[twins[0].id]["definition"]
    assert definition and rows[twins[1].id]["definition"] == definition != rows[other.id]["definition"]
    button = page.locator(f'button[data-definition="{definition}"]')
    expect(button).to_contain_text("(2)")
    button.click()
    expect(button).to_contain_text("confirm")  # the first click only asks
    assert all(_containers(s.id) for s in twins)
    button.click()
    for twin in twins:
        expect(_row(page, twin.id)).to_have_count(0)
        assert _containers(twin.id) == []
    expect(_row(page, other.id)).to_contain_text("running")


def test_the_json_route_has_ps_rows_and_a_stop_needs_the_token_header(
    dashboard: Dashboard, sandboxes: list[Sandbox]
) -> None:
    sandboxes.append(Sandbox.create("docker", ttl_s=3600))
    rows = _get(dashboard, "/api/instances").json()["instances"]
    (row,) = [r for r in rows if r["instance"] == sandboxes[0].id]
    assert row["status"] == "running" and row["provider"] == "docker"
    assert 0 <= row["idle_s"] < 3600 and 0 < row["ttl_left_s"] <= 3600
    cookie = {f"praisonai_dashboard_{dashboard.port}": dashboard.access.cookie_value}
    refused = httpx.post(
        f"{_base(dashboard)}/api/instances/{sandboxes[0].id}/stop", cookies=cookie, timeout=30
    )
    assert refused.status_code == 403
    assert _containers(sandboxes[0].id)
    unknown = _post(dashboard, "/api/instances/docker_0123456789ab/stop")
    assert unknown.status_code == 409 and "no instance 'docker_0123456789ab'" in unknown.text
    malformed = _post(dashboard, "/api/instances/not-an-id/stop")
    assert malformed.status_code == 400 and "is not an instance id" in malformed.text


def _base(board: Dashboard) -> str:
    return f"http://127.0.0.1:{board.port}"


def _get(board: Dashboard, path: str) -> httpx.Response:
    cookie = {f"praisonai_dashboard_{board.port}": board.access.cookie_value}
    key = {"x-praisonai-token": board.access.header_token}
    return httpx.get(_base(board) + path, cookies=cookie, headers=key, timeout=60)


def _post(board: Dashboard, path: str) -> httpx.Response:
    token = board.access.header_token
    cookie = {f"praisonai_dashboard_{board.port}": board.access.cookie_value}
    return httpx.post(_base(board) + path, cookies=cookie, headers={"x-praisonai-token": token}, timeout=60)


def test_a_home_that_cannot_be_read_is_a_sentence_on_the_page(
    page: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    (tmp_path / "not-a-dir").write_text("")
    monkeypatch.setenv("PRAISONAI_HOME", str(tmp_path / "not-a-dir"))
    page.reload()
    expect(page.locator(".problems")).to_contain_text("cannot be used")
