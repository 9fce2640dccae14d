"""SSH host settings: what users write, parsed and checked before any connection is made."""

from __future__ import annotations

import pytest

from praisonai._errors import ConfigError
from praisonai.compute.providers.ssh import SSHCompute, SSHHost
from praisonai.compute.registry import provider_for_record


def test_host_strings() -> None:
    host = SSHHost.parse("ci@build1:2222", key_file="~/.ssh/ci")
    assert (host.user, host.host, host.port, host.key_file) == ("ci", "build1", 2222, "~/.ssh/ci")
    assert SSHHost.parse("[::1]:22").host == "::1"
    assert SSHHost.parse("build2").port == 22
    assert SSHHost(host="h", port=2200).known_hosts_name == "[h]:2200"


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"host": "h", "prot": 22}, "prot: Extra inputs"),
        ({"host": "h", "port": 0}, "port: Input should be greater"),
        ({"hosts": ["a@b:99999"]}, "port"),
        ({"hosts": ["a b"]}, r"expected user@host\[:port\]"),
        ({"host": "h", "hosts": ["h2"]}, "not both"),
        ({"host": "h", "host_key_policy": "yolo"}, "host_key_policy"),
    ],
)
def test_bad_settings_are_one_clear_config_error(kwargs: dict[str, object], needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        SSHCompute(**kwargs)  # type: ignore[arg-type]


def test_the_recorded_options_carry_no_secret() -> None:
    provider = SSHCompute(
        host="h",
        user="u",
        password="hunter2",
        key_passphrase="pp",
        jump={"host": "bastion", "password": "j1"},
    )
    spec = provider.options.to_record()
    assert "hunter2" not in repr(spec) and "pp" not in repr(spec) and "j1" not in repr(spec)
    assert spec == {"type": "ssh", "hosts": [{"host": "h", "user": "u", "jump": {"host": "bastion"}}]}
    rebuilt = provider_for_record("ssh", spec)
    assert isinstance(rebuilt, SSHCompute)
    assert rebuilt.hosts[0] == SSHHost(host="h", user="u", jump=SSHHost(host="bastion"))


def test_hosts_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRAISONAI_SSH_HOSTS", "ci@b1, ci@b2:2222")
    monkeypatch.setenv("PRAISONAI_SSH_KEY", "/keys/ci")
    hosts = SSHCompute().hosts
    assert [(h.host, h.port, h.key_file) for h in hosts] == [("b1", 22, "/keys/ci"), ("b2", 2222, "/keys/ci")]
    monkeypatch.setenv("PRAISONAI_SSH_HOSTS", "")
    assert "PRAISONAI_SSH_HOSTS" in (SSHCompute().unavailable_reason() or "")
