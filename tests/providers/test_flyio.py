"""The Fly.io provider through its real httpx client, against the wire-level fake of the Machines
REST API (``fakes.flyio``) whose machines are docker containers (its conformance suite: in
test_conformance.py); and, when FLY_API_TOKEN and FLY_APP_NAME are set, the suite against Fly itself."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

pytest.importorskip("httpx", reason="httpx is not installed (pip install 'praisonai[flyio]')")

from fakes.flyio import FlyioFake
from served import FLY_APP, TARGETS, fly_provider, run_check

from praisonai import _portal
from praisonai._errors import (
    AuthenticationError,
    ChannelClosedError,
    ConfigError,
    ExecError,
    InstanceNotFoundError,
    ProviderUnavailableError,
)
from praisonai._limits import RETRY_BASE_S, RETRY_CAP_S
from praisonai._types import Capability
from praisonai.compute import registry
from praisonai.compute.providers.flyio import FlyCompute, _client, _exec
from praisonai.compute.testing import CHECKS, Context
from praisonai.compute.watchdog import WATCHDOG

PROVIDER = "flyio"  # the fake, provider and ctx fixtures: tests/providers/conftest.py
LIVE = bool(os.environ.get("FLY_API_TOKEN") and os.environ.get("FLY_APP_NAME"))


# ---- Fly's traps (cloud-sdks.md §5) ----------------------------------------------------------


def test_exit_code_omitted_when_zero_and_kept_otherwise(ctx: Context) -> None:
    assert _portal.call(ctx.sh, "true").exit_code == 0
    r = _portal.call(ctx.sh, "printf out; printf err >&2; exit 7")
    assert (r.stdout, r.stderr, r.exit_code) == ("out", "err", 7), r


def test_output_survives_the_json_strings(ctx: Context) -> None:
    """NUL and invalid UTF-8 travel base64 (Fly's answer is JSON text); decoded as every provider does."""
    r = _portal.call(ctx.sh, "printf 'a\\0b\\377c'")
    assert r.stdout == "a\0b\ufffdc", repr(r.stdout)


def test_a_command_longer_than_one_exec_is_polled_not_408(fake: FlyioFake) -> None:
    """With the fake's exec limit at 3 s (Fly's is ~30 s), a 5 s command still answers."""
    p = fly_provider(fake)
    info = _portal.call(p.provision)
    old_wait, old_limit = _exec.WAIT_S, fake.exec_limit_s
    _exec.WAIT_S, fake.exec_limit_s = 1.0, 3.0
    try:
        r = _portal.call(lambda: p.execute(info.instance_id, "sleep 5; echo late", timeout=60))
        assert (r.stdout, r.exit_code) == ("late\n", 0), r
        r = _portal.call(lambda: p.execute(info.instance_id, "echo a; sleep 30", timeout=2))
        assert r.timed_out and r.stdout == "a\n", r
    finally:
        _exec.WAIT_S, fake.exec_limit_s = old_wait, old_limit
        _portal.call(p.shutdown, info.instance_id)
        _portal.call(p.api.aclose)


def test_a_408_from_fly_is_one_clear_sentence(ctx: Context, fake: FlyioFake) -> None:
    fake.fail_next(408)
    with pytest.raises(ExecError, match="408 past about 30 s"):
        _portal.call(ctx.sh, "true")


def test_a_408_after_the_command_started_is_polled_not_raised(ctx: Context, fake: FlyioFake) -> None:
    """A loaded machine: the start step ran but Fly answered 408; the job is polled, once run."""
    _portal.call(ctx.sh, "rm -f ran")
    fake.fail_after_next(408)
    r = _portal.call(ctx.sh, "echo x >> ran; echo done")
    assert (r.stdout, r.exit_code) == ("done\n", 0), r
    assert _portal.call(ctx.provider.read_file, ctx.instance_id, "ran") == b"x\n"


def test_payloads_never_reach_a_command_line(provider: FlyCompute, fake: FlyioFake) -> None:
    info = _portal.call(provider.provision, {"env": {"SECRET_X": "s3cret"}})
    try:
        command = 'echo "$SECRET_X $PER"'
        r = _portal.call(lambda: provider.execute(info.instance_id, command, env={"PER": "p1"}, stdin=b"in"))
        assert r.stdout == "s3cret p1\n", r
        _portal.call(provider.write_file, info.instance_id, "f.txt", b"filebody")
        lines = [body["command"] for _, path, body in fake.requests if path.endswith("/exec")]
        assert all(line == ["sh", "-c", _exec.BOOT] for line in lines), lines[:3]
    finally:
        _portal.call(provider.shutdown, info.instance_id)


def test_identity_in_metadata_and_unique_name(ctx: Context, fake: FlyioFake) -> None:
    machine = fake.live(FLY_APP, ctx.instance_id)
    assert machine is not None, "the machine's name is the instance id"
    metadata = machine["config"]["metadata"]
    assert metadata["praisonai.instance"] == ctx.instance_id and metadata["praisonai.provider"] == "flyio"
    init = machine["config"]["init"]["exec"]  # the shared watchdog, with Fly's spool
    assert WATCHDOG in init and init[-4:] == ["praisonai-watchdog", "0", "0", _exec.SPOOL]
    assert machine["config"]["auto_destroy"] is True
    assert machine["config"]["restart"] == {"policy": "no"}


def _gone_within(provider: FlyCompute, instance_id: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            _portal.call(provider.get_status, instance_id)
        except InstanceNotFoundError:
            return True
        time.sleep(0.5)
    return False


def test_an_idle_machine_destroys_itself_and_a_busy_one_does_not(provider: FlyCompute) -> None:
    """The watchdog (PID 1) exits after idle_timeout_s without activity; auto_destroy removes it."""
    info = _portal.call(provider.provision, {"idle_timeout_s": 3})
    try:
        r = _portal.call(lambda: provider.execute(info.instance_id, "sleep 6; echo alive", timeout=20))
        assert r.stdout == "alive\n", "the machine went away under a running command"
        assert _gone_within(provider, info.instance_id, 20), "an idle machine stayed"
    finally:
        _portal.call(provider.shutdown, info.instance_id)


def test_ttl_wins_over_activity(provider: FlyCompute) -> None:
    info = _portal.call(provider.provision, {"ttl_s": 3, "auto_shutdown": False})
    try:
        with pytest.raises((InstanceNotFoundError, ExecError)):
            _portal.call(lambda: provider.execute(info.instance_id, "sleep 30", timeout=40))
        assert _gone_within(provider, info.instance_id, 20)
    finally:
        _portal.call(provider.shutdown, info.instance_id)


def test_a_lost_create_answer_is_retried_without_a_second_machine(fake: FlyioFake) -> None:
    p = fly_provider(fake)
    _portal.call(p.list_instances)  # the app exists: the next call is the create
    _portal.call(lambda: p.api.request("GET", f"/apps/{FLY_APP}", op="t"))
    fake.fail_after_next(503)
    info = _portal.call(p.provision)
    try:
        named = [m for m in fake.machines.values() if m["name"] == info.instance_id]
        assert len(named) == 1, named
        assert _portal.call(p.execute, info.instance_id, "echo ok").stdout == "ok\n"
    finally:
        _portal.call(p.shutdown, info.instance_id)
        _portal.call(p.api.aclose)


def test_a_capacity_409_on_create_is_not_taken_for_our_own_machine(
    provider: FlyCompute, fake: FlyioFake
) -> None:
    info = _portal.call(provider.provision)  # the app is checked: the next call is the create
    try:
        fake.fail_next(409)
        with pytest.raises(ProviderUnavailableError, match="capacity or quota"):
            _portal.call(provider.provision)
    finally:
        _portal.call(provider.shutdown, info.instance_id)


def test_rate_limits_are_retried_honouring_retry_after(provider: FlyCompute, fake: FlyioFake) -> None:
    fake.fail_next(429, retry_after=0.2)
    fake.fail_next(502)
    assert isinstance(_portal.call(provider.list_instances), list)


def test_an_exec_is_retried_on_429_only_so_it_runs_at_most_once(ctx: Context, fake: FlyioFake) -> None:
    """429 is answered before any work: retried. A 5xx after the work may hide a run: not retried."""
    _portal.call(ctx.sh, "rm -f once")
    fake.fail_next(429, retry_after=0.1)
    assert _portal.call(ctx.sh, "echo x >> once").exit_code == 0
    fake.fail_after_next(502)
    with pytest.raises(ChannelClosedError, match="may have run"):
        _portal.call(ctx.sh, "echo y >> once")
    # y ran once (its answer was lost), not twice: the 502 was not retried.
    assert _portal.call(ctx.provider.read_file, ctx.instance_id, "once") == b"x\ny\n"


@pytest.mark.parametrize("lost", ["cut", "502"])
def test_an_exec_whose_answer_was_lost_may_have_run_and_is_not_run_again(
    ctx: Context, fake: FlyioFake, lost: str
) -> None:
    """The command ran, its answer never came back (the connection closed, or a proxy's 5xx):
    "may have run", never a second run, never "could not be reached"."""
    _portal.call(ctx.sh, "rm -f once")
    fake.cut_after_next() if lost == "cut" else fake.fail_after_next(502)
    with pytest.raises(ChannelClosedError, match="may have run") as raised:
        _portal.call(ctx.sh, "echo y >> once")
    assert "could not be reached" not in str(raised.value) and not raised.value.retryable
    assert _portal.call(ctx.provider.read_file, ctx.instance_id, "once") == b"y\n"


def test_a_retry_after_past_the_cap_is_said_at_once_with_the_time(
    provider: FlyCompute, fake: FlyioFake
) -> None:
    fake.fail_next(429, retry_after=3600)
    before = sum(fake.calls.values())
    with pytest.raises(ProviderUnavailableError, match=r"it asks to wait 3600 s: try again at .* UTC"):
        _portal.call(provider.list_instances)
    assert sum(fake.calls.values()) == before + 1  # not asked again against its word


def test_a_persistent_rate_limit_says_what_to_do(provider: FlyCompute, fake: FlyioFake) -> None:
    for _ in range(6):
        fake.fail_next(429, retry_after=0)
    with pytest.raises(ProviderUnavailableError, match="rate limiting"):
        _portal.call(provider.list_instances)


def test_shutdown_is_stop_then_delete_and_idempotent(provider: FlyCompute, fake: FlyioFake) -> None:
    info = _portal.call(provider.provision)
    assert _portal.call(provider.shutdown, info.instance_id) is True
    stops = [body for method, path, body in fake.requests if path.endswith("/stop")]
    assert stops and stops[-1] == {}, "Fly answers 400 to a /stop without a JSON body"
    assert _portal.call(provider.shutdown, info.instance_id) is False
    with pytest.raises(InstanceNotFoundError):
        _portal.call(provider.get_status, info.instance_id)


def test_the_fake_refuses_what_fly_refuses(ctx: Context, fake: FlyioFake) -> None:
    p = ctx.provider
    assert isinstance(p, FlyCompute)
    machine_id = fake.live(FLY_APP, ctx.instance_id)["id"]  # type: ignore[index]
    base = f"/apps/{FLY_APP}/machines/{machine_id}"
    got = _portal.call(lambda: p.api.request("POST", f"{base}/stop", op="t", allow=(400,)))
    assert got.status_code == 400, "an empty /stop body"
    params = {"timeout": "61"}
    got = _portal.call(lambda: p.api.request("GET", f"{base}/wait", op="t", params=params, allow=(400,)))
    assert got.status_code == 400, "a wait longer than 60 s"


def test_a_missing_app_is_created_only_when_asked(fake: FlyioFake) -> None:
    p = fly_provider(fake, app="praisonai-nope", create_app=False)
    with pytest.raises(ConfigError, match="does not exist"):
        _portal.call(p.provision)
    _portal.call(p.api.aclose)


def test_missing_credentials_name_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("FLY_API_TOKEN", "FLY_APP_NAME"):
        monkeypatch.delenv(var, raising=False)
    p = FlyCompute(api_url="http://127.0.0.1:9")
    assert "FLY_API_TOKEN" in (p.unavailable_reason() or "")
    with pytest.raises(AuthenticationError, match="FLY_API_TOKEN"):
        _portal.call(p.list_instances)
    assert "FLY_APP_NAME" in (FlyCompute(api_token="t").unavailable_reason() or "")


def test_capabilities_are_declared_honestly() -> None:
    caps = FlyCompute.capabilities
    assert Capability.PROCESSES in caps and Capability.SESSIONS not in caps
    assert Capability.CAPTURE not in caps and Capability.NETWORK_ALLOWLIST not in caps
    assert Capability.GPU in caps and Capability.SELF_STOP in caps and Capability.NETWORK_NONE not in caps


# ---- leases, HTTP/2, credentials, env plan -----------------------------------------------------


def _lease_calls(fake: FlyioFake, machine_id: str) -> list[tuple[str, str, str | None]]:
    """(method, action, nonce) of the calls that change ``machine_id`` or its lease, in order."""
    return [
        (method, path.rsplit("/", 1)[-1], nonce)
        for method, path, _, nonce in fake.mutations
        if f"/machines/{machine_id}" in path and not path.endswith("/exec")
    ]


def test_shutdown_holds_the_machine_lease_and_sends_its_nonce(provider: FlyCompute, fake: FlyioFake) -> None:
    info = _portal.call(provider.provision)
    machine_id = info.metadata["machine_id"]
    assert _portal.call(provider.shutdown, info.instance_id) is True
    calls = _lease_calls(fake, machine_id)
    assert [(m, a) for m, a, _ in calls] == [("POST", "lease"), ("POST", "stop"), ("DELETE", machine_id)]
    nonces = {n for _, _, n in calls[1:]}
    assert len(nonces) == 1 and None not in nonces, "stop and delete carry the lease's nonce"


def test_another_holders_lease_is_waited_out(provider: FlyCompute, fake: FlyioFake) -> None:
    info = _portal.call(provider.provision)
    fake.hold_lease(info.instance_id, ttl_s=2)
    assert _portal.call(provider.shutdown, info.instance_id) is True
    refused = [s for m, p, s in fake.answers if p.endswith("/lease") and m == "POST" and s == 409]
    assert refused, "the first lease request met the other holder's lease"


def test_a_lease_held_too_long_is_one_sentence(
    provider: FlyCompute, fake: FlyioFake, monkeypatch: pytest.MonkeyPatch
) -> None:
    info = _portal.call(provider.provision)
    try:
        nonce = fake.hold_lease(info.instance_id, ttl_s=120)
        monkeypatch.setattr(_client, "LEASE_WAIT_S", 1.5)
        with pytest.raises(ProviderUnavailableError, match=r"leased by another client.*someone-else"):
            _portal.call(provider.shutdown, info.instance_id)
        machine_id = info.metadata["machine_id"]
        base = f"/apps/{FLY_APP}/machines/{machine_id}"
        got = _portal.call(
            lambda: provider.api.request("POST", f"{base}/stop", op="t", body={}, allow=(409,))
        )
        assert got.status_code == 409, "a stop without the holder's nonce"
        _portal.call(lambda: provider.api.request("DELETE", f"{base}/lease", op="t", nonce=nonce))
    finally:
        assert _portal.call(provider.shutdown, info.instance_id) is True


def test_backoff_reads_the_rate_limit_headers() -> None:
    """``retry-after`` first, else ``ratelimit-reset`` / ``x-ratelimit-reset`` (seconds or an epoch
    time), capped; without any, exponential."""
    wait = _client._backoff
    assert wait(0, _client._reset_after({"retry-after": "2", "x-ratelimit-reset": "7"})) == 2.0
    assert wait(0, _client._reset_after({"ratelimit-reset": "3"})) == 3.0
    assert 0.0 < wait(0, _client._reset_after({"x-ratelimit-reset": str(int(time.time()) + 4)})) <= 4.0
    assert wait(0, "600") == RETRY_CAP_S
    assert all(0.0 <= wait(0, None) <= RETRY_BASE_S and wait(9, None) <= RETRY_CAP_S for _ in range(50))


def test_http2_is_offered_when_h2_is_installed() -> None:
    pytest.importorskip("h2", reason="h2 is not installed (the flyio extra brings httpx[http2])")
    assert _client.http2_available()


def test_a_rejected_token_is_one_sentence(docker_ok: None) -> None:
    with FlyioFake(token="the-right-one") as strict:
        p = FlyCompute(api_token="a-wrong-one", app=FLY_APP, api_url=strict.api_url)
        with pytest.raises(AuthenticationError, match=r"Fly.io answered 401 .*check FLY_API_TOKEN") as caught:
            _portal.call(p.list_instances)
        assert "\n" not in str(caught.value)
        _portal.call(p.api.aclose)


def test_a_gpu_request_reaches_the_guest(provider: FlyCompute, fake: FlyioFake) -> None:
    info = _portal.call(provider.provision, {"gpu": "l40s"})
    try:
        guest = fake.live(FLY_APP, info.instance_id)["config"]["guest"]  # type: ignore[index]
        assert (guest["gpus"], guest["gpu_kind"], guest["cpu_kind"]) == (1, "l40s", "performance"), guest
    finally:
        _portal.call(provider.shutdown, info.instance_id)


def test_compute_providers_lists_flyio_with_what_it_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("FLY_API_TOKEN", "FLY_APP_NAME"):
        monkeypatch.delenv(var, raising=False)
    registry.register("flyio", FlyCompute)
    monkeypatch.setattr(registry, "available_providers", lambda: ["flyio"])  # flyio's row alone
    row = next(s for s in registry.provider_statuses() if s.name == "flyio")
    assert row.installed and not row.available and "FLY_API_TOKEN" in row.reason, row
    assert "gpu" in row.capabilities and "processes" in row.capabilities
    assert FlyCompute.extra == "flyio"


def test_env_plan_shows_native_emulated_and_unsupported() -> None:
    from praisonai.cli.env.plan import plan_provider
    from praisonai.sandbox._envmodel import EnvironmentDefinition

    registry.register("flyio", FlyCompute)
    definition = EnvironmentDefinition.model_validate(
        {"image": "python:3.12-slim", "resources": {"cpu": 2, "gpu": 1}, "idle_timeout": 600, "ttl": 3600,
         "network": "none", "setup": ["true"], "capture": True}
    )  # fmt: skip
    plan = {s.field: (s.level, s.why) for s in plan_provider("flyio", definition).fields}
    assert plan["image"][0] == plan["resources.cpu"][0] == plan["resources.gpu"][0] == "native"
    assert plan["idle_timeout"][0] == plan["ttl"][0] == "emulated" and "watchdog" in plan["idle_timeout"][1]
    assert plan["network"][0] == "unsupported" and plan["capture"][0] == "unsupported"


# ---- live ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def live_ctx() -> Iterator[Context]:
    if not LIVE:
        pytest.skip("set FLY_API_TOKEN and FLY_APP_NAME to run the conformance suite against Fly.io")
    provider = FlyCompute()
    info = _portal.call(provider.provision)
    try:
        yield Context(provider, info.instance_id, provider_expr=_LIVE_EXPR)
    finally:
        _portal.call(provider.shutdown, info.instance_id)


_LIVE_EXPR = "__import__('praisonai.compute.providers.flyio', fromlist=['x']).FlyCompute()"


@pytest.mark.parametrize("check", list(CHECKS))
def test_live_conformance(live_ctx: Context, check: str) -> None:
    run_check(TARGETS[PROVIDER], live_ctx, check)


def test_a_write_keeps_the_mode_and_refuses_a_directory(ctx: Context) -> None:
    """The last chunk's exec renames the new file over the target: it used to lose a replaced
    file's mode and, given a directory, move the new file into it and call that a success."""
    p, i = ctx.provider, ctx.instance_id
    assert _portal.call(ctx.sh, "mkdir -p w/dir && printf old > w/tool && chmod 750 w/tool").ok
    _portal.call(p.write_file, i, "w/tool", b"new")
    assert _portal.call(ctx.sh, "stat -c %a w/tool; cat w/tool").stdout == "750\nnew"
    with pytest.raises(IsADirectoryError):
        _portal.call(p.write_file, i, "w/dir", b"x")
    assert _portal.call(ctx.sh, "ls -A w w/dir").stdout == "w:\ndir\ntool\n\nw/dir:\n"
