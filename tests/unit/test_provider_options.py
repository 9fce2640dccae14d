"""Provider options as data: each provider's model, what the ledger stores, how a row rebuilds the
provider, secrets kept out of the ledger, and bad options as one clear ConfigError."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import SecretStr

from praisonai._errors import ConfigError, ProviderUnavailableError
from praisonai._ledger import Ledger
from praisonai.compute.base import ComputeProvider
from praisonai.compute.options import ProviderOptions
from praisonai.compute.providers.docker import DEFAULT_IMAGE, DockerCompute, DockerOptions
from praisonai.compute.providers.local import LocalCompute, LocalOptions
from praisonai.compute.providers.ssh import SSHCompute, SSHOptions
from praisonai.compute.providers.ssh._connect import SSHHost
from praisonai.compute.registry import provider_for_record, provider_from_options, resolve_compute


@pytest.mark.parametrize(
    "build",
    [
        lambda tmp: LocalCompute(),
        lambda tmp: LocalCompute(root=tmp / "instances", isolate=True),
        lambda tmp: DockerCompute(),
        lambda tmp: DockerCompute(image="python:3.12", base_url="tcp://10.0.0.1:2375", pull=False),
        lambda tmp: SSHCompute(host="build1", port=2222, user="ci", key_file="/keys/ci"),
        lambda tmp: SSHCompute(hosts=["a@h1", {"host": "h2", "jump": {"host": "bastion"}}]),
    ],
)
def test_a_ledger_row_rebuilds_an_equal_provider(
    build: Callable[[Path], ComputeProvider], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PRAISONAI_DOCKER_IMAGE", raising=False)
    provider = build(tmp_path)
    ledger = Ledger(tmp_path / "ledger.sqlite3")
    ledger.record("x_000000000001", provider.name, provider.options.to_record(), "me@host:1", 1.0)
    entry = ledger.get("x_000000000001")
    assert entry is not None
    rebuilt = provider_for_record(entry.provider, entry.spec)
    assert type(rebuilt) is type(provider)
    assert rebuilt.options == provider.options
    assert type(provider).from_options(provider.options).options == provider.options
    assert provider_from_options(provider.options).options == provider.options


def test_each_model_is_frozen_forbids_unknown_fields_and_names_its_provider() -> None:
    for model, name in ((LocalOptions, "local"), (DockerOptions, "docker"), (SSHOptions, "ssh")):
        options = model()
        assert options.type == name and model.provider_name() == name
        assert options.to_record() == {"type": name}
        with pytest.raises(ConfigError, match=f"invalid {name} provider options: colour: Extra inputs"):
            model.parse({"colour": "red"})
        with pytest.raises(ValueError, match="frozen"):
            options.type = "other"  # type: ignore[assignment]
    assert LocalCompute.options_model is LocalOptions and DockerCompute.options_model is DockerOptions


def test_options_hold_what_the_constructor_resolves(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    # Absolute: the process that rebuilds it may run elsewhere.
    assert LocalCompute(root="rel").options.root == tmp_path / "rel"
    monkeypatch.setenv("PRAISONAI_DOCKER_IMAGE", "mine:1")
    assert DockerCompute().options.to_record() == {"type": "docker", "image": "mine:1"}
    monkeypatch.setenv("PRAISONAI_SSH_HOSTS", "ci@b1:2200")
    monkeypatch.setenv("PRAISONAI_SSH_KEY", "/keys/ci")
    assert SSHCompute().options.to_record() == {
        "type": "ssh",
        "hosts": [{"host": "b1", "port": 2200, "user": "ci", "key_file": "/keys/ci"}],
    }


def test_rows_of_older_versions_without_a_type_still_rebuild(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PRAISONAI_DOCKER_IMAGE", raising=False)
    local = provider_for_record("local", {"root": "/r", "isolate": True})
    assert local.options == LocalOptions(root=Path("/r"), isolate=True)
    assert provider_for_record("local", {}).options == LocalOptions()
    docker = provider_for_record("docker", {"image": "python:3.12", "base_url": "tcp://h:2375"})
    assert docker.options == DockerOptions(image="python:3.12", base_url="tcp://h:2375")
    assert provider_for_record("docker", {}).options == DockerOptions(image=DEFAULT_IMAGE)
    ssh = provider_for_record("ssh", {"hosts": [{"host": "h", "user": "u", "jump": {"host": "b"}}]})
    assert isinstance(ssh, SSHCompute)
    assert ssh.hosts == [SSHHost(host="h", user="u", jump=SSHHost(host="b"))]


@pytest.mark.parametrize(
    ("provider", "spec", "needle"),
    [
        ("docker", {"imgae": "x"}, "recorded docker options no longer fit: imgae: Extra inputs"),
        ("docker", {"image": 3}, "recorded docker options no longer fit: image: Input should be a valid str"),
        ("local", {"type": "docker"}, "recorded local options no longer fit: type: Input should be 'local'"),
        ("ssh", {"hosts": [{"host": "h", "port": 0}]}, r"recorded ssh options no longer fit: hosts\.0\.port"),
    ],
)
def test_a_row_that_no_longer_fits_is_one_sentence(provider: str, spec: dict[str, Any], needle: str) -> None:
    with pytest.raises(ConfigError, match=needle) as caught:
        provider_for_record(provider, spec)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("cls", "kwargs", "needle"),
    [
        (DockerCompute, {"image": 3}, "invalid docker provider options: image: Input should be a valid"),
        (DockerCompute, {"pull": "maybe"}, "invalid docker provider options: pull: Input should be a valid"),
        (LocalCompute, {"isolate": "no?"}, "invalid local provider options: isolate: Input should be"),
        (LocalCompute, {"root": 3}, "invalid local provider options: root"),
        (SSHCompute, {"host": "h", "prot": 22}, "invalid SSH host settings: prot: Extra inputs"),
    ],
)
def test_bad_provider_kwargs_are_one_config_error_naming_provider_and_field(
    cls: type[ComputeProvider], kwargs: dict[str, Any], needle: str
) -> None:
    with pytest.raises(ConfigError, match=needle) as caught:
        cls(**kwargs)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        ({"type": "docker", "imgae": "x"}, "invalid docker provider options: imgae: Extra inputs"),
        ({"type": "container", "pull": []}, "invalid docker provider options: pull"),  # an alias
        ({"image": "x"}, "provider options need a 'type'"),
    ],
)
def test_bad_options_data_is_one_config_error(options: dict[str, Any], needle: str) -> None:
    with pytest.raises(ConfigError, match=needle) as caught:
        resolve_compute(options)
    assert "\n" not in str(caught.value)


def test_another_providers_options_are_refused() -> None:
    with pytest.raises(ConfigError, match="the docker provider takes DockerOptions, not LocalOptions"):
        DockerCompute.from_options(LocalOptions())


def test_options_from_data_build_the_provider(tmp_path: Path) -> None:
    provider = resolve_compute({"type": "local", "root": str(tmp_path), "isolate": True})
    assert isinstance(provider, LocalCompute) and provider.isolate and provider.root == tmp_path
    assert isinstance(resolve_compute(DockerOptions(image="python:3.12")), DockerCompute)


def test_secrets_are_left_out_at_any_depth() -> None:
    class TokenOptions(ProviderOptions):
        type: str = "vendor"
        api_key: SecretStr | None = None
        endpoint: str = "https://api.example"
        pool: tuple[SSHHost, ...] = ()

    host = SSHHost(host="h", password=SecretStr("pw"), key_passphrase=SecretStr("kp"))
    options = TokenOptions(api_key=SecretStr("sk-live"), pool=(host,))
    record = options.to_record()
    assert record == {"type": "vendor", "pool": [{"host": "h"}]}
    assert "sk-live" not in repr(record) and "pw" not in repr(record) and "kp" not in repr(record)


def test_secrets_never_reach_the_ledger_file(home: Path) -> None:
    """A provision writes its row before anything else; with a password, to a port nobody
    listens on, the refused provision takes its row away again, and the file (deleted pages
    included) never held the password."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: connections are refused
    secret = "hunter2-never-stored"
    provider = SSHCompute(host="127.0.0.1", port=port, password=secret, key_passphrase=secret + "-kp")
    with pytest.raises(ProviderUnavailableError):
        anyio.run(provider.provision, {"auto_shutdown": False})
    assert Ledger.default().entries() == []
    files = list(home.glob("ledger.sqlite3*"))
    assert files and not any(secret.encode() in f.read_bytes() for f in files)
