"""Captures on real docker: the post-setup state is saved once and later provisions start from it."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kit import write_wheel

from praisonai import _portal
from praisonai._errors import ProvisionError
from praisonai.compute.config import ComputeConfig
from praisonai.compute.providers.docker import DockerCompute

pytestmark = pytest.mark.usefixtures("docker_ok")


@pytest.fixture
def provider() -> DockerCompute:
    return DockerCompute()


@pytest.fixture
def definitions(provider: DockerCompute) -> Iterator[list[dict[str, Any]]]:
    """Definitions a test provisions: their captures are removed afterwards, pass or fail."""
    used: list[dict[str, Any]] = []
    yield used
    for definition in used:
        ref = f"praisonai-capture:{ComputeConfig.coerce(definition).capture_tag()}"
        subprocess.run(["docker", "rmi", "-f", ref], capture_output=True, check=False)


@pytest.fixture
def made(provider: DockerCompute, definitions: list[dict[str, Any]]) -> Iterator[list[str]]:
    """Instances to shut down — before the captures go (``definitions`` is torn down after this):
    removing the image of a running container would only untag it."""
    instances: list[str] = []
    yield instances
    for instance_id in instances:
        _portal.call(provider.shutdown, instance_id)


def provision(provider: DockerCompute, made: list[str], definition: dict[str, Any]) -> str:
    instance_id = _portal.call(provider.provision, definition).instance_id
    made.append(instance_id)
    return instance_id


def sh(provider: DockerCompute, instance_id: str, command: str) -> str:
    return str(_portal.call(provider.execute, instance_id, command).stdout)


def test_the_second_provision_starts_from_the_capture_and_runs_only_refresh(
    provider: DockerCompute, made: list[str], definitions: list[dict[str, Any]]
) -> None:
    definition = {
        "setup": [f"echo {uuid.uuid4().hex} >> /opt/setup-runs"],
        "refresh": ["date +%s%N > /opt/refreshed"],
        "env": {"API_TOKEN": "s3cret-value"},
    }
    definitions.append(definition)
    first = provision(provider, made, definition)
    second = provision(provider, made, definition)
    assert sh(provider, first, "wc -l < /opt/setup-runs").strip() == "1"
    assert sh(provider, second, "wc -l < /opt/setup-runs").strip() == "1", "setup ran again"
    assert sh(provider, first, "cat /opt/refreshed 2>/dev/null || echo none").strip() == "none"
    assert sh(provider, second, "cat /opt/refreshed").strip().isdigit(), "refresh did not run"
    assert sh(provider, second, 'echo "$API_TOKEN"').strip() == "s3cret-value"
    # the spool emptied for the commit held the builder's env: it is bound again, not lost
    assert sh(provider, first, 'echo "$API_TOKEN"').strip() == "s3cret-value", "the builder lost its env"
    # the capture holds no env value and none of the build container's helper state
    tag = ComputeConfig.coerce(definition).capture_tag()
    (capture,) = [c for c in _portal.call(provider.capturer.captures) if c.name == tag]
    image = provider.api.inspect_image(capture.image)
    assert "s3cret-value" not in str(image["Config"]) + str(image.get("ContainerConfig"))
    assert capture.definition == ComputeConfig.coerce(definition).definition_hash()
    assert sh(provider, second, "ls /tmp/.praisonai/bg").strip() == ""


def test_a_failed_setup_is_never_captured(provider: DockerCompute, definitions: list[dict[str, Any]]) -> None:
    definition = {"setup": [f"echo {uuid.uuid4().hex} > /opt/half-done", "exit 3"]}
    definitions.append(definition)
    with pytest.raises(ProvisionError, match="exited 3"):
        _portal.call(provider.provision, definition)
    tag = ComputeConfig.coerce(definition).capture_tag()
    assert tag not in [c.name for c in _portal.call(provider.capturer.captures)]


def test_two_processes_provisioning_one_definition_build_it_once(
    provider: DockerCompute, tmp_path: Path, definitions: list[dict[str, Any]]
) -> None:
    tmp_path.chmod(0o777)
    definition = {
        "setup": [f"echo {uuid.uuid4().hex} >> /shared/builds && sleep 2"],
        "mount_paths": [f"{tmp_path}:/shared"],
    }
    definitions.append(definition)
    script = (
        "import anyio, sys\nfrom praisonai.compute.providers.docker import DockerCompute\n"
        f"p = DockerCompute()\niid = anyio.run(p.provision, {definition!r}).instance_id\n"
        "anyio.run(p.shutdown, iid)\nprint('ok')\n"
    )
    argv = [sys.executable, "-c", script]
    children = [subprocess.Popen(argv, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [child.communicate(timeout=180)[0] for child in children]
    assert outputs == ["ok\n", "ok\n"]
    assert len((tmp_path / "builds").read_text().splitlines()) == 1, "the definition was built twice"


def test_pip_packages_install_offline_from_a_mounted_wheel_directory(
    provider: DockerCompute, made: list[str], tmp_path: Path, definitions: list[dict[str, Any]]
) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    write_wheel(wheels, "praisonai_probe", "1.2", "VALUE = 'installed offline'\n")
    definition = {
        "packages": {"pip": ["praisonai-probe>=1.0"]},
        "mount_paths": [f"{wheels}:/wheels:ro"],
        "env": {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": "/wheels"},
        "network": "none",
    }
    definitions.append(definition)
    instance_id = provision(provider, made, definition)
    out = sh(provider, instance_id, "python3 -c 'import praisonai_probe; print(praisonai_probe.VALUE)'")
    assert out == "installed offline\n"


def test_prune_keeps_the_most_recently_used(
    provider: DockerCompute, made: list[str], definitions: list[dict[str, Any]]
) -> None:
    for _ in range(2):
        definition = {"setup": [f"echo {uuid.uuid4().hex} > /opt/x"]}
        definitions.append(definition)
        provision(provider, made, definition)
    ours = {ComputeConfig.coerce(d).capture_tag() for d in definitions}
    newest = next(c.name for c in _portal.call(provider.capturer.captures) if c.name in ours)
    would = _portal.call(lambda: provider.capturer.prune(older_than_s=3600, dry_run=True))
    assert not ours & {c.name for c in would}, "recently used captures are not old"
    for instance_id in made:  # a capture an instance runs from cannot go
        _portal.call(provider.shutdown, instance_id)
    gone = {c.name for c in _portal.call(lambda: provider.capturer.prune(keep=1))}
    left = {c.name for c in _portal.call(provider.capturer.captures)}
    assert newest in left and (ours - {newest}) <= gone


def test_list_and_prune_see_only_this_homes_captures(
    provider: DockerCompute,
    made: list[str],
    definitions: list[dict[str, Any]],
    home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Another PRAISONAI_HOME on the same engine keeps its captures: they are not listed here,
    and `prune` here (even keeping none) leaves them."""
    definition = {"setup": [f"echo {uuid.uuid4().hex} > /opt/x"]}
    definitions.append(definition)
    provision(provider, made, definition)
    for instance_id in made:
        _portal.call(provider.shutdown, instance_id)
    tag = ComputeConfig.coerce(definition).capture_tag()
    assert tag in {c.name for c in _portal.call(provider.capturer.captures)}
    monkeypatch.setenv("PRAISONAI_HOME", str(tmp_path / "another-home"))
    assert tag not in {c.name for c in _portal.call(provider.capturer.captures)}
    assert tag not in {c.name for c in _portal.call(lambda: provider.capturer.prune(keep=0))}
    monkeypatch.setenv("PRAISONAI_HOME", str(home))
    assert tag in {c.name for c in _portal.call(provider.capturer.captures)}


def test_a_capture_keeps_neither_the_main_channel_nor_its_key(
    provider: DockerCompute, made: list[str], definitions: list[dict[str, Any]]
) -> None:
    definition = {"setup": [f"echo {uuid.uuid4().hex} >/opt/marker"]}
    definitions.append(definition)
    instance_id = provision(provider, made, definition)
    key = provider.handoff_key(instance_id)  # the build container's: still alive after the capture
    assert key is not None
    ref = f"praisonai-capture:{ComputeConfig.coerce(definition).capture_tag()}"
    image = provider.api.inspect_image(ref)
    carried = [field for field, value in image.items() if key in str(value)]  # never the key itself
    assert carried == []
    assert image["Config"]["Cmd"] == provider.api.inspect_image("praisonai-sandbox:latest")["Config"]["Cmd"]
