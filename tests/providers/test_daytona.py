"""The Daytona provider through the real ``daytona`` SDK, against the wire-level fake
(``fakes.daytona``) whose sandboxes are docker containers (its conformance suite: in
test_conformance.py); and, when DAYTONA_API_KEY is set, the suite against Daytona itself."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator

import anyio
import pytest

pytest.importorskip("daytona", reason="the daytona SDK is not installed (pip install 'praisonai[daytona]')")

from fakes.daytona import DaytonaFake
from served import TARGETS, run_check

from praisonai import _portal
from praisonai._errors import (
    AuthenticationError,
    ChannelClosedError,
    InstanceNotFoundError,
    ProviderUnavailableError,
)
from praisonai._types import Capability
from praisonai.compute.config import ComputeConfig
from praisonai.compute.providers.daytona import DaytonaCompute
from praisonai.compute.testing import CHECKS, Context

PROVIDER = "daytona"  # the fake, provider and ctx fixtures: tests/providers/conftest.py
LIVE = bool(os.environ.get("DAYTONA_API_KEY"))


# ---- Daytona's traps (cloud-sdks.md §3) ------------------------------------------------------


def test_stdout_and_stderr_stay_apart_although_exec_merges_them(ctx: Context, fake: DaytonaFake) -> None:
    r = _portal.call(ctx.sh, "printf out; printf err >&2; exit 7")
    assert (r.stdout, r.stderr, r.exit_code) == ("out", "err", 7), r


def test_a_timeout_keeps_partial_output_though_daytona_drops_it(ctx: Context) -> None:
    r = _portal.call(lambda: ctx.sh("echo before; echo e >&2; sleep 30", timeout=1))
    assert r.timed_out and r.exit_code == 124 and r.stdout == "before\n" and r.stderr == "e\n", r


def test_identity_labels_and_unique_name(ctx: Context, fake: DaytonaFake) -> None:
    box = fake.find(ctx.instance_id)
    assert box is not None, "the sandbox's name is the instance id"
    assert box["labels"]["praisonai.instance"] == ctx.instance_id
    assert box["labels"]["praisonai.provider"] == "daytona"
    assert box["autoDeleteInterval"] == 0 and box["autoStopInterval"] == 0  # auto_shutdown False


def test_env_goes_through_the_api_never_a_command_line(provider: DaytonaCompute, fake: DaytonaFake) -> None:
    info = _portal.call(provider.provision, {"env": {"SECRET_X": "s3cret"}})
    try:
        r = _portal.call(
            lambda: provider.execute(info.instance_id, 'echo "$SECRET_X"', env={"PER_CALL": "p1"})
        )
        assert r.stdout == "s3cret\n"
        commands = [body.get("command", "") for _, _, body in fake.requests if isinstance(body, dict)]
        assert not any("s3cret" in c or "p1" in c for c in commands)
    finally:
        _portal.call(provider.shutdown, info.instance_id)


def test_background_processes_keep_payloads_off_command_lines(ctx: Context, fake: DaytonaFake) -> None:
    """A process is started through a one-shot helper exec: its command and env travel in the exec
    env, the helper's own variables never reach the process, and quoting survives."""
    p, iid = ctx.provider, ctx.instance_id
    command = (
        'printf \'%s|%s|%s\' "$ODD" "${PRAISONAI_HELPER:-none}" "${PRAISONAI_REQUEST:-none}"; '
        "echo; echo 'it''s' >&2"
    )
    info = _portal.call(lambda: p.processes.start(iid, command, env={"ODD": "a 'b' $c\nd"}))
    done = _portal.call(lambda: p.processes.wait(iid, info.process_id, timeout=30))
    assert done.exit_code == 0, done
    assert _portal.call(lambda: p.processes.output(iid, info.process_id)) == b"a 'b' $c\nd|none|none\n"
    assert _portal.call(lambda: p.processes.output(iid, info.process_id, stream="stderr")) == b"its\n"
    listed = _portal.call(lambda: p.processes.list(iid))
    assert info.process_id in {x.process_id for x in listed}
    commands = [body.get("command", "") for _, _, body in fake.requests if isinstance(body, dict)]
    assert not any("ODD" in c or "a 'b'" in c for c in commands)


def test_network_none_is_block_all(provider: DaytonaCompute, fake: DaytonaFake) -> None:
    info = _portal.call(provider.provision, {"network": "none"})
    try:
        assert fake.find(info.instance_id)["networkBlockAll"] is True  # type: ignore[index]
    finally:
        _portal.call(provider.shutdown, info.instance_id)


def test_an_allow_list_reaches_daytona_as_its_two_comma_separated_lists(
    provider: DaytonaCompute, fake: DaytonaFake
) -> None:
    allow = ["pypi.org", "*.github.com", "10.1.2.3", "192.168.0.0/16"]
    info = _portal.call(provider.provision, {"network": {"allow": allow}})
    try:
        box = fake.find(info.instance_id)
        assert box is not None and box["networkBlockAll"] is False
        assert box["domainAllowList"] == "pypi.org,*.github.com"
        assert box["networkAllowList"] == "10.1.2.3/32,192.168.0.0/16"
    finally:
        _portal.call(provider.shutdown, info.instance_id)


@pytest.mark.usefixtures("home")
def test_ttl_wins_over_activity(provider: DaytonaCompute, fake: DaytonaFake) -> None:
    # minute_s=1: ttl 60 s is one fake "minute"; a busy sandbox is destroyed at its deadline.
    info = _portal.call(provider.provision, {"ttl_s": 60, "auto_shutdown": False})
    assert fake.find(info.instance_id)["ttlMinutes"] == 1  # type: ignore[index]
    time.sleep(2.5)
    with pytest.raises(InstanceNotFoundError):
        _portal.call(provider.get_status, info.instance_id)
    assert _portal.call(provider.shutdown, info.instance_id) is False


def test_a_rate_limit_says_what_to_do(provider: DaytonaCompute, fake: DaytonaFake) -> None:
    fake.fail_next(429, retry_after=1)
    with pytest.raises(ProviderUnavailableError, match=r"rate limiting.*retry after 1 s: try again at"):
        _portal.call(provider.list_instances)


@pytest.mark.parametrize("lost", [0, 502], ids=["cut", "502"])
def test_an_exec_whose_answer_was_lost_may_have_run_and_is_not_run_again(
    ctx: Context, fake: DaytonaFake, lost: int
) -> None:
    """The command ran, its answer never came back: "may have run" (ChannelClosedError, not
    retryable), never a second run, never "could not be reached", and never an ExceptionGroup."""
    _portal.call(ctx.sh, "rm -f once")
    fake.lose_next_exec_answer(lost)
    with pytest.raises(ChannelClosedError, match="may have run") as raised:
        _portal.call(ctx.sh, "echo y >> once")
    assert "could not be reached" not in str(raised.value) and not raised.value.retryable
    assert _portal.call(ctx.provider.read_file, ctx.instance_id, "once") == b"y\n"


def test_an_sdk_error_inside_an_exception_group_is_translated_like_any_other() -> None:
    """A task group (ours or the SDK's) wraps the error it ends on: the boundary unwraps one."""
    from daytona import DaytonaConnectionError

    from praisonai.compute.providers.daytona._client import translated

    async def refused() -> None:
        raise DaytonaConnectionError("refused")

    async def in_a_task_group() -> None:
        with translated("exec"):
            async with anyio.create_task_group() as tasks:  # raises an ExceptionGroup of one
                tasks.start_soon(refused)

    with pytest.raises(ProviderUnavailableError, match="Daytona could not be reached") as raised:
        anyio.run(in_a_task_group)
    assert isinstance(raised.value.__cause__, DaytonaConnectionError)


def test_a_busy_exec_renews_the_idle_timer_and_an_idle_sandbox_stops(
    provider: DaytonaCompute, fake: DaytonaFake
) -> None:
    # minute_s=1: idle_timeout 60 s is one fake "minute" = 1 s; processes inside are not activity.
    info = _portal.call(provider.provision, {"idle_timeout_s": 60})
    try:
        r = _portal.call(lambda: provider.execute(info.instance_id, "sleep 3; echo alive", timeout=10))
        assert r.stdout == "alive\n", "the sandbox stopped under a running command"
        time.sleep(3)
        with pytest.raises(InstanceNotFoundError):  # stopped when idle, then deleted (auto_delete 0)
            _portal.call(provider.get_status, info.instance_id)
    finally:
        _portal.call(provider.shutdown, info.instance_id)


@pytest.mark.usefixtures("home")
def test_a_capture_is_a_daytona_snapshot_and_the_second_provision_skips_setup(
    provider: DaytonaCompute, fake: DaytonaFake
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
        assert f"praisonai-{tag}" in fake.snapshots
        assert fake.find(second.instance_id)["snapshot"] == f"praisonai-{tag}"  # type: ignore[index]
    finally:
        for info in (first, second):
            _portal.call(provider.shutdown, info.instance_id)


def test_unknown_and_vanished_sandboxes(provider: DaytonaCompute) -> None:
    with pytest.raises(InstanceNotFoundError):
        _portal.call(provider.get_status, "daytona_000000000000")
    assert _portal.call(provider.shutdown, "daytona_000000000000") is False


def test_missing_credentials_name_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("DAYTONA_API_KEY", "DAYTONA_JWT_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    p = DaytonaCompute(api_url="http://127.0.0.1:9/api")
    assert "DAYTONA_API_KEY" in (p.unavailable_reason() or "")
    with pytest.raises(AuthenticationError, match="DAYTONA_API_KEY"):
        _portal.call(p.list_instances)


def test_capabilities_are_declared_honestly() -> None:
    caps = DaytonaCompute.capabilities
    assert Capability.NETWORK_NONE in caps and Capability.SELF_STOP in caps
    assert Capability.CAPTURE in caps
    assert Capability.NETWORK_ALLOWLIST in caps
    assert Capability.PROCESSES in caps and Capability.SESSIONS not in caps  # exec has no stdin for a shell
    assert Capability.PTY in caps  # Daytona's PTY sessions (test_daytona_pty.py)


# ---- live ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def live_ctx() -> Iterator[Context]:
    if not LIVE:
        pytest.skip("set DAYTONA_API_KEY to run the conformance suite against Daytona")
    provider = DaytonaCompute()
    info = _portal.call(provider.provision)
    try:
        yield Context(provider, info.instance_id, provider_expr=_LIVE_EXPR)
    finally:
        _portal.call(provider.shutdown, info.instance_id)


_LIVE_EXPR = "__import__('praisonai.compute.providers.daytona', fromlist=['x']).DaytonaCompute()"


@pytest.mark.parametrize("check", list(CHECKS))
def test_live_conformance(live_ctx: Context, check: str) -> None:
    run_check(TARGETS[PROVIDER], live_ctx, check)


def test_a_huge_output_is_cut_in_the_sandbox_with_the_exact_count(ctx: Context) -> None:
    r = _portal.call(
        lambda: ctx.sh("head -c 5000000 /dev/zero | tr '\\0' x; echo; echo end", max_output=1000)
    )
    assert r.truncated and r.stdout.startswith("x" * 500) and r.stdout.endswith("x\nend\n"), r.stdout[:80]
    assert f"[… {5000005 - 1000} bytes of output truncated …]" in r.stdout, r.stdout


def test_a_small_output_comes_back_in_the_exec_answer(ctx: Context, fake: DaytonaFake) -> None:
    """Apart and with its exit code, and no download: the sandbox lookup and the exec are the
    only vendor calls (besides the activity renewals of a slow exec: every 0.3 s here)."""
    before = dict(fake.calls)
    r = _portal.call(lambda: ctx.sh("printf 'a\\0b'; printf 'e\\n' >&2; exit 4"))
    assert (r.stdout, r.stderr, r.exit_code) == ("a\0b", "e\n", 4), r
    spent = {
        k: v - before.get(k, 0)
        for k, v in fake.calls.items()
        if v != before.get(k, 0) and not k.endswith("last-activity")
    }
    assert sum(spent.values()) == 2 and any("execute" in k for k in spent), spent


def test_expose_is_a_signed_preview_url_asked_for_once_per_port(ctx: Context, fake: DaytonaFake) -> None:
    from praisonai._limits import PREVIEW_URL_TTL_S
    from praisonai.compute.testing.ports import fetch, serve_here

    port, body = _portal.call(serve_here, ctx, ctx.instance_id)
    before = fake.calls.get("GET /api/sandbox/*/ports/*/signed-preview-url", 0)
    url = _portal.call(ctx.provider.expose, ctx.instance_id, port)
    assert _portal.call(ctx.provider.expose, ctx.instance_id, port) == url
    assert _portal.call(fetch, f"{url}/page.txt") == body
    assert fake.calls["GET /api/sandbox/*/ports/*/signed-preview-url"] == before + 1, "the second is reused"
    box = fake.find(ctx.instance_id)
    assert box is not None and box["_preview_ttls"][-1] == str(PREVIEW_URL_TTL_S)
