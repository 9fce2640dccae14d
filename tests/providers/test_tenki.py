"""The Tenki provider through the real ``tenki`` SDK, against the wire-level fake
(``fakes.tenki``, gRPC from the wheel's own stubs) whose sandboxes are
docker containers (its conformance suite: in test_conformance.py); and, when TENKI_API_KEY is
set, the suite against Tenki itself."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
import warnings
from collections.abc import Iterator

import pytest

pytest.importorskip("tenki", reason="the tenki SDK is not installed (pip install 'praisonai[tenki]')")

import grpc  # type: ignore[import-untyped]
from fakes.tenki import TenkiFake
from kit import race_writers
from served import TARGETS, run_check

from praisonai import _portal
from praisonai._errors import AuthenticationError, ExecError, InstanceNotFoundError, PathNotFoundError
from praisonai._types import Capability
from praisonai.compute import registry
from praisonai.compute.config import ComputeConfig
from praisonai.compute.providers.tenki import TenkiCompute
from praisonai.compute.testing import CHECKS, Context

PROVIDER = "tenki"  # the fake, provider and ctx fixtures: tests/providers/conftest.py
LIVE = bool(os.environ.get("TENKI_API_KEY") or os.environ.get("TENKI_AUTH_TOKEN"))
_MODULE = "__import__('praisonai.compute.providers.tenki', fromlist=['x'])"


def _expr(fake: TenkiFake) -> str:
    return f"{_MODULE}.TenkiCompute(api_key='tk_fake', api_url={fake.base_url!r})"


def _run(fn: object, *args: object) -> object:
    return _portal.call(fn, *args)  # type: ignore[arg-type]


def _gone_within(provider: TenkiCompute, instance_id: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            _portal.call(provider.get_status, instance_id)
        except InstanceNotFoundError:
            return True
        time.sleep(0.5)
    return False


# ---- Tenki's traps (cloud-sdks.md §4) ------------------------------------------------------------


def test_tags_are_lowercase_and_the_labels_live_in_metadata(ctx: Context, fake: TenkiFake) -> None:
    box = fake.find(ctx.instance_id)
    assert box is not None, "the sandbox carries the instance id in its metadata"
    assert box["tags"] == ["praisonai-provider=tenki", f"praisonai-instance={ctx.instance_id}"]
    assert all(tag == tag.lower() for tag in box["tags"])
    assert box["metadata"]["praisonai.provider"] == "tenki"
    assert box["idle_timeout_minutes"] == 0, "idle_timeout_minutes is ignored by Tenki: never sent"


def test_env_goes_through_the_api_never_a_command_line(provider: TenkiCompute, fake: TenkiFake) -> None:
    """Only this test's commands are read: the module's fake keeps every earlier test's argv too,
    where a pid or a random name may spell a value by chance (a CI run once failed on "p1")."""
    ours = len(fake.argvs)
    info = _portal.call(provider.provision, {"env": {"SECRET_X": "s3cret-Zq"}})
    try:
        line, per_call = 'echo "$SECRET_X $PER_CALL"', {"PER_CALL": "per-Zq1"}
        r = _portal.call(lambda: provider.execute(info.instance_id, line, env=per_call))
        assert r.stdout == "s3cret-Zq per-Zq1\n"
        assert not any("s3cret-Zq" in " ".join(a) or "per-Zq1" in " ".join(a) for a in fake.argvs[ours:])
        _portal.call(provider.write_file, info.instance_id, "f.bin", b"payload-Zq-\xff\x00")
        assert _portal.call(provider.read_file, info.instance_id, "f.bin") == b"payload-Zq-\xff\x00"
        assert not any("payload-Zq" in " ".join(a) for a in fake.argvs[ours:])
    finally:
        _portal.call(provider.shutdown, info.instance_id)


def test_every_run_is_asked_for_as_root_and_commands_drop_to_uid_1000(ctx: Context, fake: TenkiFake) -> None:
    """Tenki may run an unprivileged Run as its own user; ours are all privileged (root frames the
    results), and the command itself is started as uid 1000 by us (compute.separation)."""
    ours = len(fake.privileged)
    assert _portal.call(ctx.sh, "id -u").stdout == "1000\n"
    _portal.call(ctx.provider.write_file, ctx.instance_id, "priv.txt", b"x")
    assert _portal.call(ctx.provider.read_file, ctx.instance_id, "priv.txt") == b"x"
    assert fake.privileged[ours:] and all(fake.privileged[ours:]), fake.privileged[ours:]


def test_an_exec_on_a_held_handle_costs_one_vendor_call(ctx: Context, fake: TenkiFake) -> None:
    """The handle found first (by tag, then a data-plane credential) is kept with its credential:
    the next command is the Run stream alone. Another process pays the lookup once."""
    _portal.call(lambda: ctx.sh("true"))
    before = dict(fake.calls)
    r = _portal.call(lambda: ctx.sh("printf 'a\\0b'; printf 'e\\n' >&2; exit 4"))
    assert (r.stdout, r.stderr, r.exit_code) == ("a\0b", "e\n", 4), r
    spent = {k: v - before.get(k, 0) for k, v in fake.calls.items() if v != before.get(k, 0)}
    assert spent == {"Run": 1}, spent
    fresh = TenkiCompute(api_key="tk_fake", api_url=fake.base_url)
    before = dict(fake.calls)
    _portal.call(lambda: fresh.execute(ctx.instance_id, "true"))
    spent = {k: v - before.get(k, 0) for k, v in fake.calls.items() if v != before.get(k, 0)}
    assert spent == {"ListWorkspaceSandboxes": 1, "CreateSessionCredential": 1, "Run": 1}, spent


def test_a_sandbox_terminated_elsewhere_is_not_found_through_a_held_handle(
    provider: TenkiCompute, fake: TenkiFake
) -> None:
    info = _portal.call(provider.provision)
    _portal.call(lambda: provider.execute(info.instance_id, "true"))  # the handle is held now
    box = fake.find(info.instance_id)
    assert box is not None
    fake.terminate(box)  # its ttl, or another process
    with pytest.raises(InstanceNotFoundError):
        _portal.call(lambda: provider.execute(info.instance_id, "true"))
    assert _portal.call(provider.shutdown, info.instance_id) is False


def test_a_timeout_keeps_partial_output(ctx: Context) -> None:
    r = _portal.call(lambda: ctx.sh("echo before; echo e >&2; sleep 30", timeout=1))
    assert r.timed_out and r.exit_code == 124 and r.stdout == "before\n" and r.stderr == "e\n", r


def test_a_missing_cwd_is_a_path_error(ctx: Context) -> None:
    with pytest.raises(PathNotFoundError, match="does not exist"):
        _portal.call(lambda: ctx.provider.execute(ctx.instance_id, "pwd", cwd="/no/such/dir"))


def test_shutdown_terminates_once_and_then_is_already_gone(provider: TenkiCompute, fake: TenkiFake) -> None:
    info = _portal.call(provider.provision)
    box = fake.find(info.instance_id)
    assert box is not None
    assert _portal.call(provider.shutdown, info.instance_id) is True
    assert box["state"] == "TERMINATED"
    assert _portal.call(provider.shutdown, info.instance_id) is False
    with pytest.raises(InstanceNotFoundError):
        _portal.call(provider.get_status, info.instance_id)


def test_another_process_lists_and_stops_by_tag(provider: TenkiCompute, fake: TenkiFake) -> None:
    info = _portal.call(provider.provision)
    script = (
        "from praisonai import _portal\n"
        f"p = {_expr(fake)}\n"
        "print(' '.join(i.instance_id for i in _portal.call(p.list_instances)))\n"
        f"print(_portal.call(p.shutdown, {info.instance_id!r}))\n"
    )
    try:
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                              check=False)  # fmt: skip
        assert done.returncode == 0, done.stderr
        listed, stopped = done.stdout.splitlines()
        assert info.instance_id in listed.split() and stopped == "True"
        assert fake.find(info.instance_id) is None
    finally:
        _portal.call(provider.shutdown, info.instance_id)


@pytest.mark.usefixtures("home")
def test_idle_is_our_reapers_since_tenki_ignores_its_own(provider: TenkiCompute, fake: TenkiFake) -> None:
    info = _portal.call(provider.provision, {"idle_timeout_s": 2})
    try:
        box = fake.find(info.instance_id)
        assert box is not None and box["idle_timeout_minutes"] == 0 and box["timeout_at"] is None
        assert _gone_within(provider, info.instance_id, 30), "an idle sandbox stayed"
    finally:
        _portal.call(provider.shutdown, info.instance_id)


@pytest.mark.usefixtures("home")
def test_ttl_is_tenkis_max_duration(provider: TenkiCompute, fake: TenkiFake) -> None:
    info = _portal.call(provider.provision, {"ttl_s": 3, "auto_shutdown": False})
    box = fake.find(info.instance_id)
    assert box is not None and box["timeout_at"] is not None
    assert round(box["timeout_at"] - box["created"]) == 3
    assert _gone_within(provider, info.instance_id, 30)
    assert box["state"] == "TERMINATED"
    assert _portal.call(provider.shutdown, info.instance_id) is False


def test_429_and_5xx_are_retried_without_a_second_sandbox(provider: TenkiCompute, fake: TenkiFake) -> None:
    # The create's answer is lost after the sandbox was made (a gateway 502: UNAVAILABLE in
    # gRPC), then the listing
    # that looks for it is rate limited (Tenki's 429): one sandbox in the end, adopted.
    fake.fail_next(grpc.StatusCode.UNAVAILABLE, "502 bad gateway", after=True)
    fake.fail_next(grpc.StatusCode.RESOURCE_EXHAUSTED, "rate limit exceeded")
    before = fake.calls.get("CreateSession", 0)
    info = _portal.call(provider.provision)
    try:
        mine = [
            b for b in fake.sessions.values() if b["metadata"].get("praisonai.instance") == info.instance_id
        ]
        assert len(mine) == 1 and fake.calls["CreateSession"] == before + 1
        fake.fail_next(grpc.StatusCode.UNAVAILABLE, "503 upstream")
        assert info.instance_id in {i.instance_id for i in _portal.call(provider.list_instances)}
    finally:
        _portal.call(provider.shutdown, info.instance_id)


def test_network_none_and_an_allowlist_are_tenkis_egress(provider: TenkiCompute, fake: TenkiFake) -> None:
    none = _portal.call(provider.provision, {"network": "none"})
    allow = ["pypi.org", "*.github.com", "10.1.2.3", "192.168.0.0/16"]
    listed = _portal.call(provider.provision, {"network": {"allow": allow}})
    try:
        assert fake.find(none.instance_id)["outbound"] is False  # type: ignore[index]
        box = fake.find(listed.instance_id)
        assert box is not None and box["outbound"] is True
        assert box["allow_domains"] == ["pypi.org", "*.github.com"]
        assert box["allow_cidrs"] == ["10.1.2.3/32", "192.168.0.0/16"]
    finally:
        for info in (none, listed):
            _portal.call(provider.shutdown, info.instance_id)


@pytest.mark.usefixtures("home")
def test_a_capture_is_a_tenki_snapshot_and_the_second_provision_skips_setup(
    provider: TenkiCompute, fake: TenkiFake
) -> None:
    marker = uuid.uuid4().hex
    definition = {"setup": [f"echo {marker} >> built"], "refresh": ["echo refreshed >> log"]}
    first = _portal.call(provider.provision, definition)
    second = _portal.call(provider.provision, definition)
    try:
        built = _portal.call(provider.read_file, second.instance_id, "built")
        assert built == f"{marker}\n".encode(), "setup ran again instead of starting from the snapshot"
        assert _portal.call(provider.read_file, second.instance_id, "log") == b"refreshed\n"
        tag = ComputeConfig.coerce(definition).capture_tag()
        snaps = [s for s in fake.snapshots.values() if s["name"] == f"praisonai-{tag}"]
        assert len(snaps) == 1
        assert fake.find(second.instance_id)["snapshot_id"] == snaps[0]["id"]  # type: ignore[index]
    finally:
        for info in (first, second):
            _portal.call(provider.shutdown, info.instance_id)


def test_unknown_instances(provider: TenkiCompute) -> None:
    with pytest.raises(InstanceNotFoundError):
        _portal.call(provider.get_status, "tenki_000000000000")
    assert _portal.call(provider.shutdown, "tenki_000000000000") is False


def test_credentials_one_sentence_each(monkeypatch: pytest.MonkeyPatch, fake: TenkiFake) -> None:
    for var in ("TENKI_API_KEY", "TENKI_AUTH_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    missing = TenkiCompute(api_url=fake.base_url)
    assert "TENKI_API_KEY" in (missing.unavailable_reason() or "")
    with pytest.raises(AuthenticationError, match="TENKI_API_KEY"):
        _portal.call(missing.list_instances)
    assert "tk_" in (TenkiCompute(api_key="sk-wrong").unavailable_reason() or "")
    revoked = TenkiCompute(api_key="tk_revoked", api_url=fake.base_url)
    with pytest.raises(AuthenticationError, match="refused the API key") as caught:
        _portal.call(revoked.list_instances)
    assert "\n" not in str(caught.value)


def test_capabilities_are_declared_honestly() -> None:
    caps = TenkiCompute.capabilities
    assert Capability.NETWORK_NONE in caps and Capability.NETWORK_ALLOWLIST in caps
    assert Capability.CAPTURE in caps and Capability.PROCESSES in caps
    assert Capability.SELF_STOP not in caps, "Tenki ignores idle_timeout_minutes: idle is our reaper's"
    assert Capability.GPU not in caps and Capability.SESSIONS not in caps


def test_idle_timeout_minutes_really_is_ignored_by_the_sdk() -> None:
    """The trap itself, in the wheel: passing it only warns (so we never pass it)."""
    from tenki_sandbox.client import build_create_session_request

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        build_create_session_request(idle_timeout_minutes=5)
    assert any(issubclass(w.category, DeprecationWarning) and "ignored" in str(w.message) for w in seen)


# ---- live ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def live_ctx() -> Iterator[Context]:
    if not LIVE:
        pytest.skip("set TENKI_API_KEY to run the conformance suite against Tenki")
    provider = TenkiCompute()
    info = _portal.call(provider.provision)
    try:
        yield Context(provider, info.instance_id, provider_expr=f"{_MODULE}.TenkiCompute()")
    finally:
        _portal.call(provider.shutdown, info.instance_id)


@pytest.mark.parametrize("check", list(CHECKS))
def test_live_conformance(live_ctx: Context, check: str) -> None:
    run_check(TARGETS[PROVIDER], live_ctx, check)


def test_env_plan_shows_ttl_native_and_idle_emulated() -> None:
    """Tenki ends a sandbox at ``max_duration`` itself; its idle setting is ignored, so idle is
    our reaper's: the plan says which is which."""
    from praisonai.cli.env.plan import plan_provider
    from praisonai.sandbox.environment import EnvironmentDefinition

    registry.register("tenki", TenkiCompute)
    definition = EnvironmentDefinition.model_validate({"idle_timeout": 300, "ttl": 3600, "network": "none"})
    levels = {f.field: f.level for f in plan_provider("tenki", definition).fields}
    assert levels == {"network": "native", "idle_timeout": "emulated", "ttl": "native"}, levels


def test_concurrent_writes_never_mix(ctx: Context) -> None:
    """Two writers of one file and a reader: the reader sees one payload or the other, never a mix."""
    seen = race_writers([ctx.provider] * 3, ctx.instance_id, "shared.bin", writes=8, size=3 << 20)
    assert seen <= {"payload 0", "payload 1"}, f"a reader saw a mix: {seen}"


def test_a_write_cut_half_way_leaves_the_old_file(ctx: Context, fake: TenkiFake) -> None:
    """The stream that carries a write's bytes is cut half-way (the guest's stdin ends there, as a
    lost connection): cat wrote what came and the script renamed it over the old file. Now the
    write fails, the old file stays, and nothing is left beside it."""
    p, i = ctx.provider, ctx.instance_id
    assert _portal.call(ctx.sh, "mkdir -p cut && printf old > cut/kept").ok
    fake.stdin_budget = 1000
    try:
        with pytest.raises(ExecError):
            _portal.call(p.write_file, i, "cut/kept", b"n" * 4000)
    finally:
        fake.stdin_budget = None
    assert _portal.call(ctx.sh, "ls -A cut; cat cut/kept").stdout == "kept\nold"
