"""The e2b provider through the real ``e2b`` SDK against the wire-level fake (``fakes.e2b``),
whose sandboxes are local docker containers: E2B's traps (raise on a non-zero exit, a timed-out
process left running, text-by-default reads, an absolute timeout renewed as an idle one, listing
by metadata). Its conformance suite runs in test_conformance.py; live, here, when
``E2B_API_KEY`` is set."""

from __future__ import annotations

import os
import time

import pytest

pytest.importorskip("e2b")


from fakes.e2b import E2BFake

from praisonai import _portal
from praisonai._errors import AuthenticationError, InstanceNotFoundError, UnsupportedFeatureError
from praisonai.compute.providers.e2b import E2BCompute
from praisonai.compute.testing import Context

pytestmark = pytest.mark.usefixtures("docker_ok")

PROVIDER = "e2b"  # the fake, provider and ctx fixtures: tests/providers/conftest.py
EXPR = "__import__('praisonai.compute.providers.e2b', fromlist=['E2BCompute']).E2BCompute()"


def test_exit_code_survives_the_sdks_raise(ctx: Context) -> None:
    r = _portal.call(ctx.sh, "echo out; echo err >&2; exit 42")
    assert (r.exit_code, r.stdout, r.stderr) == (42, "out\n", "err\n")


def test_long_command_runs_past_the_sdks_60s_default_setting(ctx: Context) -> None:
    # The SDK's default command timeout is 60 s; ours is passed explicitly (0 = none).
    r = _portal.call(lambda: ctx.provider.execute(ctx.instance_id, "sleep 2; echo done", timeout=None))
    assert r.stdout == "done\n" and not r.timed_out


def test_binary_output_survives_the_sdks_text_decoding(ctx: Context) -> None:
    # The SDK decodes process output as UTF-8 with errors="replace", so nothing binary may reach
    # the helper channel's stdout (see providers/e2b/_channel.py): background output is read
    # through the files API, and a session's output is text as on every provider. A broken
    # sequence at the end of a body must not break the framing after it.
    raw = bytes(range(256)) + b"\xe2\x82"
    p, iid = ctx.provider, ctx.instance_id

    async def check() -> None:
        await p.write_file(iid, "binary.bin", raw)
        info = await p.processes.start(iid, "cat binary.bin; cat binary.bin >&2")
        await p.processes.wait(iid, info.process_id, timeout=30)
        assert await p.processes.output(iid, info.process_id) == raw
        part = await p.processes.output(iid, info.process_id, stream="stderr", offset=10, limit=20)
        assert part == raw[10:30]
        session = await p.open_session(iid)
        try:
            r = await session.run("cat binary.bin")
            assert (r.stdout, r.exit_code) == (raw.decode("utf-8", "replace"), 0), r
            assert (await session.run("echo next")).stdout == "next\n"
        finally:
            await session.close()
        assert info.process_id in {q.process_id for q in await p.processes.list(iid)}

    _portal.call(check)


def test_exec_costs_one_envd_call(fake: E2BFake, ctx: Context) -> None:
    # Exec stays native: 1 envd call each (over the helper channel: 1.06 for `true`, 2.06 for
    # `echo hi`, as the spooled output is fetched with a second request).
    _portal.call(ctx.sh, "true")
    before = len(fake.calls)
    for _ in range(3):
        _portal.call(ctx.sh, "echo hi")
    envd = [call for call in fake.calls[before:] if call.startswith("POST /process.Process/")]
    assert envd == ["POST /process.Process/Start"] * 3, envd


def test_channel_traffic_renews_the_deadline(fake: E2BFake) -> None:
    p = E2BCompute()
    info = _portal.call(p.provision, {"idle_timeout_s": 600})
    try:
        sandbox = next(
            s for s in fake.sandboxes.values() if s.metadata["praisonai.instance"] == info.instance_id
        )
        _portal.call(p.processes.list, info.instance_id)  # opens the channel
        sandbox.end_at = time.time() + 5  # as if the deadline were near
        p._renewals.renewed.clear()
        _portal.call(p.processes.list, info.instance_id)  # a request on the open channel only
        deadline = time.monotonic() + 10
        while sandbox.end_at - time.time() < 20 and time.monotonic() < deadline:
            time.sleep(0.05)  # the renewal runs in a thread of its own
        assert sandbox.end_at - time.time() > 20, "channel traffic must renew the deadline"
    finally:
        _portal.call(p.shutdown, info.instance_id)


def test_quiet_session_command_outlives_the_idle_timeout(fake: E2BFake) -> None:
    p = E2BCompute()
    info = _portal.call(p.provision, {"idle_timeout_s": 2})

    async def quiet() -> str:
        session = await p.open_session(info.instance_id)
        try:
            return (await session.run("sleep 4; echo alive", timeout=20)).stdout
        finally:
            await session.close()

    try:
        assert _portal.call(quiet) == "alive\n"
    finally:
        _portal.call(p.shutdown, info.instance_id)


def test_metadata_carries_identity_and_ttl(fake: E2BFake, ctx: Context) -> None:
    sandbox = next(
        s for s in fake.sandboxes.values() if s.metadata.get("praisonai.instance") == ctx.instance_id
    )
    assert sandbox.metadata["praisonai.provider"] == "e2b"
    assert (
        "praisonai.ttl_deadline" in sandbox.metadata and sandbox.metadata["praisonai.workdir"] == "/workspace"
    )


def test_ttl_clamps_the_deadline_and_idle_renews_it(fake: E2BFake) -> None:
    p = E2BCompute()
    info = _portal.call(p.provision, {"idle_timeout_s": 600, "ttl_s": 30})
    try:
        sandbox = next(
            s for s in fake.sandboxes.values() if s.metadata["praisonai.instance"] == info.instance_id
        )
        assert sandbox.end_at - time.time() <= 31, "ttl must clamp E2B's absolute timeout"
        sandbox.end_at = time.time() + 5  # as if the deadline were near
        p._renewals.renewed.clear()
        _portal.call(p.execute, info.instance_id, "true")
        assert sandbox.end_at - time.time() > 20, "activity must renew the deadline"
    finally:
        _portal.call(p.shutdown, info.instance_id)


def test_idle_instance_stops_itself_and_counts_as_shut_down(fake: E2BFake) -> None:
    p = E2BCompute()
    info = _portal.call(p.provision, {"idle_timeout_s": 2})
    time.sleep(3.5)
    other = E2BCompute()  # another process's view: nothing cached
    with pytest.raises(InstanceNotFoundError):
        _portal.call(other.get_status, info.instance_id)
    assert _portal.call(other.shutdown, info.instance_id) is False


def test_busy_instance_outlives_its_idle_timeout(fake: E2BFake) -> None:
    p = E2BCompute()
    info = _portal.call(p.provision, {"idle_timeout_s": 2})
    try:
        r = _portal.call(lambda: p.execute(info.instance_id, "sleep 4; echo alive", timeout=20))
        assert r.stdout == "alive\n", r
    finally:
        _portal.call(p.shutdown, info.instance_id)


def test_network_reaches_the_create_call(fake: E2BFake) -> None:
    p = E2BCompute()
    for network, expected in (
        ("none", {"allow_internet_access": False}),
        ({"allow": ["pypi.org"]}, {"network": {"allowOut": ["pypi.org"], "denyOut": ["0.0.0.0/0"]}}),
    ):
        info = _portal.call(p.provision, {"network": network})
        try:
            sandbox = next(
                s for s in fake.sandboxes.values() if s.metadata["praisonai.instance"] == info.instance_id
            )
            for key, value in expected.items():  # the create body as the SDK put it on the wire
                assert sandbox.request.get(key) == value, sandbox.request
        finally:
            _portal.call(p.shutdown, info.instance_id)


def test_unsupported_config_is_refused_in_one_sentence(fake: E2BFake) -> None:
    with pytest.raises(UnsupportedFeatureError, match="the e2b provider cannot honour cpu"):
        _portal.call(E2BCompute().provision, {"cpu": 2})


def test_unknown_id_is_not_found(fake: E2BFake) -> None:
    with pytest.raises(InstanceNotFoundError):
        _portal.call(E2BCompute().get_status, "e2b_000000000000")


def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("E2B_API_KEY", raising=False)
    p = E2BCompute()
    assert "E2B_API_KEY" in (p.unavailable_reason() or "")
    with pytest.raises(AuthenticationError, match="set E2B_API_KEY"):
        _portal.call(p.provision)


#: Read at import, before the fake's fixture puts its own key and URLs into the environment.
LIVE_KEY = os.environ.get("E2B_API_KEY")


@pytest.mark.skipif(not LIVE_KEY, reason="live E2B runs need E2B_API_KEY")
def test_live_conformance(monkeypatch: pytest.MonkeyPatch) -> None:  # pragma: no cover - needs an account
    """The whole suite against E2B itself, also while the fake's variables are set."""
    for name in ("E2B_API_URL", "E2B_SANDBOX_URL", "E2B_HTTP_VERSION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("E2B_API_KEY", LIVE_KEY or "")
    provider = E2BCompute()
    info = _portal.call(provider.provision)
    try:
        from praisonai.compute.testing import run_checks

        failures = _portal.call(run_checks, Context(provider, info.instance_id, provider_expr=EXPR))
        assert not failures, failures
    finally:
        _portal.call(provider.shutdown, info.instance_id)


def test_ttl_wins_over_activity(fake: E2BFake) -> None:
    p = E2BCompute()
    info = _portal.call(p.provision, {"idle_timeout_s": 600, "ttl_s": 4})
    _portal.call(p.execute, info.instance_id, "true")
    p._renewals.renewed.clear()  # the next call renews: it must still stop at the ttl
    _portal.call(p.execute, info.instance_id, "true")
    time.sleep(5)
    assert _portal.call(E2BCompute().shutdown, info.instance_id) is False, "the ttl did not stop it"


def test_a_retried_create_makes_one_sandbox(fake: E2BFake) -> None:
    from e2b import AsyncSandbox

    async def twice() -> set[str]:
        made = {(await AsyncSandbox.create(timeout=30, idempotency_key="praisonai-retry-1")).sandbox_id
                for _ in range(2)}  # fmt: skip
        for sandbox_id in made:
            await AsyncSandbox.kill(sandbox_id)
        return made

    assert len(_portal.call(twice)) == 1


def test_refused_key_says_which_variable(fake: E2BFake) -> None:
    from fakes.e2b import REFUSED_KEY

    with pytest.raises(AuthenticationError, match=r"E2B refused the API key.*E2B_API_KEY"):
        _portal.call(E2BCompute(api_key=REFUSED_KEY).provision)


def test_options_round_trip_without_the_key() -> None:
    from praisonai.compute.providers.e2b import E2BOptions

    p = E2BCompute(template="my-template", api_key="e2b_secret")
    record = p.options.to_record()
    assert record == {"type": "e2b", "template": "my-template"}, "the key must never reach the ledger"
    again = E2BCompute.from_options(E2BOptions.parse(record))
    assert again.options.template == "my-template" and again.options.api_key is None


def test_second_provision_of_a_definition_starts_from_its_capture(fake: E2BFake) -> None:
    p = E2BCompute()
    cfg = {"setup": [f"echo ran >> /workspace/setup-{time.time_ns()}.log"]}
    first = _portal.call(p.provision, cfg)
    try:
        assert len(fake.snapshots) >= 1, "setup was not captured as an E2B snapshot"
        names = [n for names in fake.snapshots.values() for n in names]
        assert any(n.startswith("praisonai-capture-") for n in names), names
    finally:
        _portal.call(p.shutdown, first.instance_id)
    again = E2BCompute()  # another process's view: it finds the snapshot by name
    second = _portal.call(again.provision, cfg)
    try:
        r = _portal.call(again.execute, second.instance_id, "cat /workspace/setup-*.log")
        assert r.stdout == "ran\n", f"setup ran again, or the capture was not used: {r.stdout!r}"
    finally:
        _portal.call(again.shutdown, second.instance_id)
