"""The mount-path race, on a real docker engine: a host mount is checked on its resolved path, and
docker is given that path, so a link repointed between the check and the container's creation (at
``/etc``, which the check refuses) does not change what the instance mounts. The swap happens at
the seam right after the check returns (the check is wrapped), so the race is won every time."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from praisonai import _portal
from praisonai._errors import ConfigError
from praisonai.compute import config
from praisonai.compute.providers.docker import DockerCompute, container_name


def _repoint(link: Path, target: str) -> None:
    """Make ``link`` point at ``target`` in one step (as an attacker racing us would)."""
    fresh = link.with_name(link.name + ".new")
    fresh.symlink_to(target)
    os.replace(fresh, link)


def _swap_after_the_check(monkeypatch: pytest.MonkeyPatch, link: Path, target: str) -> None:
    """Once the check of ``link`` has passed, repoint it at ``target``."""
    check = config.host_mount_refusal

    def check_then_swap(source: str, *rest: Any) -> str | None:
        why = check(source, *rest)
        if why is None and os.path.normpath(source) == str(link) and os.readlink(link) != target:
            _repoint(link, target)
        return why

    monkeypatch.setattr(config, "host_mount_refusal", check_then_swap)


@pytest.mark.usefixtures("docker_ok", "home")
def test_a_link_repointed_after_the_check_does_not_change_what_is_mounted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make: Callable[..., Any]
) -> None:
    allowed, link = tmp_path / "allowed", tmp_path / "link"
    allowed.mkdir()
    (allowed / "marker").write_text("the checked directory\n")
    link.symlink_to(allowed)
    _swap_after_the_check(monkeypatch, link, "/etc")
    provider, instance_id = make(DockerCompute(), mount_paths=[f"{link}:/mnt/x:ro"])
    assert os.readlink(link) == "/etc"  # the race was run: the link moved after the check
    mounts = provider.api.inspect_container(container_name(instance_id))["Mounts"]
    assert [m["Source"] for m in mounts if m["Destination"] == "/mnt/x"] == [str(allowed)], mounts
    seen = _portal.call(provider.execute, instance_id, "cat /mnt/x/marker; ls /mnt/x")
    assert seen.stdout.splitlines() == ["the checked directory", "marker"], seen


@pytest.mark.usefixtures("docker_ok", "home")
def test_a_checked_directory_replaced_by_a_link_before_creation_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make: Callable[..., Any]
) -> None:
    """The checked path itself changed kind (a directory became a link to /etc) between the check
    and the creation: refused in one sentence, nothing made."""
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    check = config.host_mount_refusal

    def check_then_replace(source: str, *rest: Any) -> str | None:
        why = check(source, *rest)
        if why is None and allowed.is_dir() and not allowed.is_symlink():
            allowed.rmdir()
            allowed.symlink_to("/etc")
        return why

    monkeypatch.setattr(config, "host_mount_refusal", check_then_replace)
    with pytest.raises(ConfigError, match=r"changed since it was checked"):
        make(DockerCompute(), mount_paths=[f"{allowed}:/mnt/x:ro"])
