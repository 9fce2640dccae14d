"""The exact command shapes a fake written for PraisonAI parses, the refusal of an object with
part of PraisonAI's protocol, and ``resolve_compute(None)`` meaning "no remote compute"."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from test_praisonai_shared_compute import FakeCompute  # PraisonAI's own fake, as it wrote it

from praisonai import Sandbox
from praisonai._errors import ExecError, UnsupportedFeatureError
from praisonai.compute import default_compute, resolve_compute
from praisonai.compute.foreign import ForeignProvider, _shell
from praisonai.compute.registry import compute_provider
from praisonai.managed.instance._source import compute_from, compute_record, provider_of
from praisonai.managed.shared import SharedCompute


@pytest.fixture(autouse=True)
def _isolated(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no environment file of the repo's


def test_praisonai_fake_reads_and_writes_through_the_agents_tools() -> None:
    fake = FakeCompute()
    with SharedCompute(fake) as shared:
        _, read_file, write_file, _ = shared.build_tools()
        write_file("/workspace/a.txt", "SECRET-42")
        write_file("notes.md", "line\nPRAISONAI_EOF_X\n")
        assert read_file("/workspace/a.txt") == "SECRET-42"
        assert read_file("/workspace/missing").startswith("Error: ")
    commands = [command for _, command in fake.commands]
    assert "cat '/workspace/a.txt'" in commands, "the text read is exactly cat 'PATH'"
    assert fake.files == {"/workspace/a.txt": "SECRET-42", "/workspace/notes.md": "line\nPRAISONAI_EOF_X"}
    assert fake.shutdowns == ["fake_1"]


def test_heredoc_write_has_praisonai_shape_and_keeps_the_exact_size() -> None:
    command = _shell.heredoc_write("/w/a b.txt", "abc", "PRAISONAI_EOF_QQ")
    heredoc = "cat > '/w/a b.txt' <<'PRAISONAI_EOF_QQ'\nabc\nPRAISONAI_EOF_QQ\n"
    assert heredoc + "truncate -s 3 '/w/a b.txt'" in command
    assert command.startswith("set -e\n")
    ends_in_newline = _shell.heredoc_write("/w/x", "abc\n", "D")
    assert ends_in_newline.endswith("cat > '/w/x' <<'D'\nabc\nD"), "the heredoc's own newline is the file's"


def test_a_delimiter_found_in_the_content_is_drawn_again(monkeypatch: pytest.MonkeyPatch) -> None:
    letters = itertools.chain(["A"] * 16, itertools.repeat("B"))
    monkeypatch.setattr(_shell.secrets, "choice", lambda _: next(letters))
    assert _shell.new_delimiter("x PRAISONAI_EOF_AAAAAAAAAAAAAAAA y") == "PRAISONAI_EOF_" + "B" * 16


class _ProvisionOnly:
    async def provision(self, config: Any) -> Any: ...


class _SyncExecute(FakeCompute):
    def execute(self, instance_id: str, command: str, timeout: Any = None) -> dict[str, Any]:  # type: ignore[override]
        return {"stdout": "", "stderr": "", "exit_code": 0}


def test_an_object_with_part_of_the_protocol_is_refused_in_one_sentence() -> None:
    told = (
        r"^the compute object _ProvisionOnly has no execute or shutdown: PraisonAI's .*Protocol needs async"
    )
    with pytest.raises(TypeError, match=told):
        resolve_compute(_ProvisionOnly())
    with pytest.raises(TypeError, match=r"_SyncExecute has a plain \(not async\) execute"):
        SharedCompute(_SyncExecute())
    with pytest.raises(TypeError, match="compute must be a provider name"):
        resolve_compute(object())


def test_resolve_compute_is_praisonais_bridge() -> None:
    fake = FakeCompute()
    assert resolve_compute(None) is None
    assert resolve_compute(fake) is fake
    assert type(resolve_compute("default")) is type(default_compute())
    # What provisions still takes None as the default, and wraps the user's object.
    assert SharedCompute(None).provider_name == default_compute().provider_name
    assert isinstance(SharedCompute(fake)._planned().provider, ForeignProvider)


def test_a_session_on_a_users_provider_cannot_be_resumed_elsewhere_without_it() -> None:
    record = compute_record(FakeCompute())
    assert record == {"provider": "foreign", "object": "fake"}
    with pytest.raises(ValueError, match=r"your own provider object \(fake\).*pass it again as compute="):
        compute_from(record)


def test_a_recorded_instance_of_a_users_provider_is_never_rebuilt_as_one_of_ours() -> None:
    """A session's instance reference names the adapter, not the object's own provider_name (a
    user's "docker" or "subprocess" must not come back as our docker or local provider)."""

    class NamedLikeOurs(FakeCompute):
        provider_name = "subprocess"

    user = NamedLikeOurs()
    reference = {**compute_record(user), "instance_id": "fake_1"}  # type: ignore[dict-item]
    assert provider_of(reference, user) is compute_provider(user)
    with pytest.raises(ValueError, match=r"your own provider object \(subprocess\)"):
        provider_of(reference, "subprocess")


def test_a_failing_object_is_one_sentence_and_leaves_no_instance() -> None:
    class Broken(FakeCompute):
        async def execute(self, instance_id: str, command: str, timeout: Any = None) -> dict[str, Any]:
            raise RuntimeError("the daemon went away")

    broken = Broken()
    with pytest.raises(ExecError, match=r"^the fake provider's execute failed: the daemon went away$"):
        Sandbox.create(broken)
    assert broken.shutdowns == ["fake_1"], "the instance it made is shut down"
    with pytest.raises(UnsupportedFeatureError, match="cannot honour ttl_s"):
        Sandbox.create(FakeCompute(), ttl_s=60)
