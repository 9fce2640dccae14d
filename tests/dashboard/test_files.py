"""The files page: a real browser uploads and downloads through it, and its routes keep the API's
containment (links shown, never followed; nothing outside the workspace)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from praisonai import Sandbox
from praisonai.dashboard import Dashboard

BLOB = bytes(range(256)) * 4096 + b"\x00\r\n\xff"  # 1 MiB and a little: every byte value


@pytest.fixture
def home(module_home: Path) -> Path:
    """The dashboard's home is the one that made the instance: another home's is refused."""
    return module_home


@pytest.fixture(scope="module")
def instance(docker_ok: None, module_home: Path) -> Iterator[Sandbox]:
    with Sandbox.create("docker") as sandbox:
        yield sandbox


@pytest.mark.docker
def test_a_file_uploaded_and_downloaded_through_the_page_is_byte_exact(
    page: Any, dashboard: Dashboard, instance: Sandbox, tmp_path: Path
) -> None:
    page.goto(f"http://127.0.0.1:{dashboard.port}/#/instances/{instance.id}/files")
    expect(page.locator("#files-path")).to_have_text(".")
    page.locator("#upload").set_input_files(
        {"name": "blob.bin", "mimeType": "application/octet-stream", "buffer": BLOB}
    )
    page.locator("#upload-button").click()
    link = page.locator('#files tr[data-name="blob.bin"] a')
    expect(link).to_be_visible()
    assert instance.read_file("blob.bin") == BLOB
    with page.expect_download() as downloading:
        link.click()
    saved = tmp_path / "blob.bin"
    downloading.value.save_as(saved)
    assert hashlib.sha256(saved.read_bytes()).digest() == hashlib.sha256(BLOB).digest()


@pytest.mark.docker
def test_a_link_is_listed_as_a_link_and_never_downloaded(dashboard: Dashboard, instance: Sandbox) -> None:
    instance.exec("mkdir -p linked && ln -sf /proc/self/environ linked/env && echo in > linked/real")
    listing = _get(dashboard, f"/api/instances/{instance.id}/files", path="linked").json()
    kinds = {e["name"]: (e["type"], e["symlink_target"]) for e in listing["entries"]}
    assert kinds == {"env": ("symlink", "/proc/self/environ"), "real": ("file", None)}
    refused = _get(dashboard, f"/api/instances/{instance.id}/file", path="linked/env")
    assert refused.status_code == 400 and "links are not followed" in refused.text
    assert _get(dashboard, f"/api/instances/{instance.id}/file", path="linked/real").content == b"in\n"


def test_on_a_local_instance_nothing_outside_its_workspace_comes_out(
    dashboard: Dashboard, tmp_path: Path
) -> None:
    secret = tmp_path / "host-secret"
    secret.write_text("HOST SECRET")
    with Sandbox.create("local") as local:
        workspace = local.exec("pwd").stdout.strip()
        os.symlink(secret, Path(workspace) / "escape")
        (Path(workspace) / "inside").write_text("fine")
        assert _get(dashboard, f"/api/instances/{local.id}/file", path="inside").text == "fine"
        assert (
            "links are not followed" in _get(dashboard, f"/api/instances/{local.id}/file", path="escape").text
        )
        for path in (
            "escape",
            f"../{Path(workspace).name}/escape",
            str(secret),
            "../../../../" + str(secret),
        ):
            answer = _get(dashboard, f"/api/instances/{local.id}/file", path=path)
            assert answer.status_code in (400, 403, 404), (path, answer.status_code)
            assert "HOST SECRET" not in answer.text


def test_an_upload_needs_the_token_header_and_an_unknown_instance_is_one_sentence(
    dashboard: Dashboard,
) -> None:
    cookie = {f"praisonai_dashboard_{dashboard.port}": dashboard.access.cookie_value}
    url = f"http://127.0.0.1:{dashboard.port}/api/instances/docker_0123456789ab/file?path=x"
    assert httpx.put(url, content=b"x", cookies=cookie, timeout=30).status_code == 403
    unknown = _get(dashboard, "/api/instances/docker_0123456789ab/files", path=".")
    assert unknown.status_code == 404
    assert unknown.text.startswith("no instance 'docker_0123456789ab' to list files of")


def _get(board: Dashboard, route: str, **params: str) -> httpx.Response:
    cookie = {f"praisonai_dashboard_{board.port}": board.access.cookie_value}
    key = {"x-praisonai-token": board.access.header_token}
    url = f"http://127.0.0.1:{board.port}{route}"
    return httpx.get(url, params=params, cookies=cookie, headers=key, timeout=60)
