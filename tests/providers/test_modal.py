"""The Modal provider through the real ``modal`` SDK, against the wire-level fake
(``fakes.modal``: Modal's gRPC control plane and task command router on
loopback, sandboxes as real docker containers): Modal's traps (its conformance suite: in
test_conformance.py)."""

from __future__ import annotations

import functools
import gc
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("modal")

from fakes.modal import ModalFake
from kit import set_environment
from served import IMAGE, TARGETS, run_check

from praisonai import _portal
from praisonai._errors import InstanceNotFoundError, PraisonAIError
from praisonai._types import ExecRequest
from praisonai.compute.config import ComputeConfig
from praisonai.compute.providers.modal import ModalCompute, _transport
from praisonai.compute.providers.modal._linger import LingeringPool
from praisonai.compute.testing import CHECKS, Context
from praisonai.runtime.channel import Channel

PROVIDER = "modal"  # the fake, provider and ctx fixtures: tests/providers/conftest.py
# how a child process of a cross-process check rebuilds the provider (no entry point needed)
_MODULE = "__import__('praisonai.compute.providers.modal', fromlist=['_'])"


@pytest.fixture(autouse=True)
def _collect_sdk_garbage() -> Iterator[None]:
    """The SDK's handles (synchronicity, grpclib) finalized by a GC pass that lands inside a later
    ``ast.parse`` (pytest's assertion rewriting, tests/unit/test_structure.py) trip CPython 3.11.7's
    "AST constructor recursion depth mismatch": collect them after each test, while they are ours."""
    yield
    gc.collect()


def test_a_command_longer_than_modals_arg_cap_runs(ctx: Context) -> None:
    payload = "x" * 100_000  # Modal refuses argv over 64 KiB: the command must not travel there
    r = _portal.call(ctx.sh, f"printf %s '{payload}' | wc -c")
    assert r.exit_code == 0 and r.stdout.strip() == "100000", r


def test_a_large_binary_file_goes_both_ways(ctx: Context) -> None:
    data = bytes(range(256)) * 4096  # 1 MiB: through exec stdin, never a command line
    _portal.call(ctx.provider.write_file, ctx.instance_id, "big.bin", data)
    assert _portal.call(ctx.provider.read_file, ctx.instance_id, "big.bin") == data


def test_timeout_kills_the_command(ctx: Context) -> None:
    started = time.monotonic()
    r = _portal.call(lambda: ctx.sh("echo begun; sleep 300", timeout=2))
    assert r.timed_out and "begun" in r.stdout and time.monotonic() - started < 10
    left = _portal.call(ctx.sh, "ps -eo args | grep -c '^sleep 300' || true")
    assert left.stdout.strip() == "0", "the timed-out command still runs"


def test_non_zero_exit_and_separate_streams(ctx: Context) -> None:
    r = _portal.call(ctx.sh, "echo out; echo err >&2; exit 7")
    assert (r.exit_code, r.stdout, r.stderr) == (7, "out\n", "err\n")


def test_tags_carry_the_praisonai_identity_and_list_finds_it(fake: ModalFake, ctx: Context) -> None:
    box = next(b for b in fake.state.boxes.values() if b.name == ctx.instance_id)
    assert box.tags["praisonai.instance"] == ctx.instance_id and box.tags["praisonai.provider"] == "modal"
    ids = [i.instance_id for i in _portal.call(ModalCompute(image=IMAGE).list_instances)]
    assert ctx.instance_id in ids


def test_lifetime_is_idle_timeout_plus_absolute_timeout(fake: ModalFake, provider: ModalCompute) -> None:
    info = _portal.call(provider.provision, {"idle_timeout_s": 123, "ttl_s": 456})
    try:
        box = next(b for b in fake.state.boxes.values() if b.name == info.instance_id)
        d = box.definition  # type: ignore[attr-defined]
        assert (d.idle_timeout_secs, d.timeout_secs) == (123, 456)
    finally:
        _portal.call(provider.shutdown, info.instance_id)


def test_env_reaches_the_sandbox_not_a_command_line(fake: ModalFake, provider: ModalCompute) -> None:
    info = _portal.call(provider.provision, {"env": {"API_TOKEN": "s3cret"}})
    try:
        r = _portal.call(provider.execute, info.instance_id, "echo $API_TOKEN")
        assert r.stdout == "s3cret\n"
        box = next(b for b in fake.state.boxes.values() if b.name == info.instance_id)
        assert "s3cret" not in " ".join(box.definition.entrypoint_args)  # type: ignore[attr-defined]
    finally:
        _portal.call(provider.shutdown, info.instance_id)


def test_network_allowlist_and_none_reach_the_create_call(fake: ModalFake, provider: ModalCompute) -> None:
    info = _portal.call(provider.provision, {"network": {"allow": ["pypi.org", "10.0.0.0/8"]}})
    try:
        box = next(b for b in fake.state.boxes.values() if b.name == info.instance_id)
        access = box.definition.network_access  # type: ignore[attr-defined]
        assert list(access.allowed_domains) == ["pypi.org"] and list(access.allowed_cidrs) == ["10.0.0.0/8"]
    finally:
        _portal.call(provider.shutdown, info.instance_id)
    info = _portal.call(provider.provision, {"network": "none"})
    try:
        r = _portal.call(provider.execute, info.instance_id, "cat /proc/net/dev")
        assert {line.split(":")[0].strip() for line in r.stdout.splitlines()[2:]} == {"lo"}
    finally:
        _portal.call(provider.shutdown, info.instance_id)


def test_shutdown_is_idempotent_and_unknown_ids_are_not_found(provider: ModalCompute) -> None:
    info = _portal.call(provider.provision)
    assert _portal.call(provider.shutdown, info.instance_id) is True
    assert _portal.call(provider.shutdown, info.instance_id) is False
    with pytest.raises(InstanceNotFoundError):
        _portal.call(provider.get_status, info.instance_id)
    with pytest.raises(InstanceNotFoundError):
        _portal.call(provider.execute, info.instance_id, "true")


def test_missing_credentials_name_the_variables(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.delenv("MODAL_TOKEN_ID", raising=False)
    monkeypatch.delenv("MODAL_TOKEN_SECRET", raising=False)
    monkeypatch.setenv("MODAL_CONFIG_PATH", str(tmp_path / "none.toml"))
    reason = ModalCompute().unavailable_reason() or ""
    assert "MODAL_TOKEN_ID" in reason and "MODAL_TOKEN_SECRET" in reason


def test_idle_timeout_spares_a_busy_sandbox_and_stops_an_idle_one(provider: ModalCompute) -> None:
    info = _portal.call(provider.provision, {"idle_timeout_s": 2})
    try:
        r = _portal.call(provider.execute, info.instance_id, "sleep 4; echo alive")
        assert r.stdout == "alive\n"  # busy past its idle timeout: still there
        time.sleep(4)
        with pytest.raises(InstanceNotFoundError):
            _portal.call(provider.get_status, info.instance_id)
    finally:
        _portal.call(provider.shutdown, info.instance_id)


def test_ttl_wins_over_a_busy_sandbox(provider: ModalCompute) -> None:
    info = _portal.call(provider.provision, {"ttl_s": 3})
    try:
        started = time.monotonic()
        with pytest.raises(InstanceNotFoundError):  # the sandbox went away under the command
            _portal.call(lambda: provider.execute(info.instance_id, "sleep 20", timeout=30))
        assert time.monotonic() - started < 10
        with pytest.raises(InstanceNotFoundError):
            _portal.call(provider.get_status, info.instance_id)
    finally:
        _portal.call(provider.shutdown, info.instance_id)


def test_vendor_calls_per_exec(fake: ModalFake, ctx: Context) -> None:
    """A command through the helper channel costs one vendor call, its request on the helper's
    stdin (its end and output come over the held stdio streams); a native ``sb.exec`` costs five:
    start, stdin EOF, two stdio reads, wait. Every 64th also posts the spool's cleanup."""
    _portal.call(ctx.sh, "true")  # the channel is open
    before = dict(fake.state.calls)
    for _ in range(10):
        _portal.call(ctx.sh, "true")
    spent = {k: v - before.get(k, 0) for k, v in fake.state.calls.items() if v != before.get(k, 0)}
    assert set(spent) == {"TaskExecStdinWrite"} and spent["TaskExecStdinWrite"] <= 11, spent


def test_a_process_that_exits_with_its_channel_open_ends_the_helper(fake: ModalFake, ctx: Context) -> None:
    """Modal ends no exec when its client goes, so a helper left running would keep the sandbox
    active until its timeout: a process that exits with channels open sends their EOF."""
    box = next(b for b in fake.state.boxes.values() if b.name == ctx.instance_id)
    before = set(box.execs)
    body = f"print(anyio.run(lambda: p.execute({ctx.instance_id!r}, 'echo hi')).stdout)"
    assert _portal.call(ctx.in_child, body).strip() == "hi"
    helpers = [box.execs[e] for e in set(box.execs) - before]
    assert helpers, "the child ran no exec"
    deadline = time.monotonic() + 20
    while any(e.code is None for e in helpers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(e.code is not None for e in helpers), "the child's helper still runs"


def test_closing_a_transport_ends_its_reader_without_waiting_for_the_process(ctx: Context) -> None:
    """``close`` returns at once and the reader ends (its reads are cancelled) even while the
    process keeps its output open; a send after it fails as on a closed pipe."""
    provider = ctx.provider
    assert isinstance(provider, ModalCompute)
    _portal.call(provider.execute, ctx.instance_id, "true")  # the sandbox handle is known
    transport = provider._transport(ctx.instance_id, ["sh", "-c", "echo up; exec sleep 120"])
    got, closed = bytearray(), threading.Event()
    transport.start(got.extend, lambda data: None, closed.set)
    deadline = time.monotonic() + 20
    while got != b"up\n" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert got == b"up\n" and transport.alive()
    transport.close()
    assert closed.wait(20), "the reader did not end after close()"
    with pytest.raises(OSError):
        transport.send(b"more\n")
    _portal.call(provider.execute, ctx.instance_id, "pkill -f 'sleep 120' || true")


def test_an_unused_channel_closes_after_its_linger_and_a_busy_one_stays() -> None:
    """Modal counts a running exec as activity: an idle helper must go, or the sandbox never
    idles out; one waiting for a command must stay."""

    class Channel:
        is_open = True

        def close(self) -> None:
            self.is_open = False

    opened: list[Channel] = []

    async def open_channel(instance_id: str) -> Any:
        opened.append(Channel())
        return opened[-1]

    pool = LingeringPool(open_channel, lambda instance_id: 0.2)

    async def busy(channel: Any) -> None:
        await anyio.sleep(0.6)  # longer than the linger: a command still running

    anyio.run(pool.run, "i1", busy)
    assert opened[0].is_open, "closed while a call used it"
    deadline = time.monotonic() + 20
    while opened[0].is_open and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not opened[0].is_open, "an unused channel stayed open"
    anyio.run(pool.run, "i1", busy)
    assert len(opened) == 2, "the next call did not open a new channel"
    pool.drop("i1")


def test_an_orphaned_helper_ends_itself_once_idle(monkeypatch: pytest.MonkeyPatch, ctx: Context) -> None:
    """A client killed outright sends no EOF, and Modal ends no exec when its client goes: the
    helper's guard ends it once no request came for a while, but not while its command runs."""
    provider, iid = ctx.provider, ctx.instance_id
    assert isinstance(provider, ModalCompute)
    _portal.call(provider.execute, iid, "true")  # the sandbox handle is known
    monkeypatch.setattr(_transport, "ORPHAN_HELPER_S", 1)
    opener = functools.partial(provider._transport, iid)
    channel = _portal.call(Channel.open, opener, provider._spool(iid))
    _transport._OPEN.discard(channel.transport)  # as if this process were killed: no EOF, ever
    request = ExecRequest("sleep 3; echo done", cwd="/", timeout=30, max_output=1000)
    assert _portal.call(channel.exec, request).stdout == "done\n"  # busy past the guard's period
    deadline = time.monotonic() + 30
    while channel.transport.alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not channel.transport.alive(), "the orphaned helper still runs"


# ---- live: the same conformance suite on Modal itself, when its credentials are set ----------------

_MODAL_VARS = ("MODAL_SERVER_URL", "MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET")
_ORIGINAL_ENV = {k: os.environ.get(k) for k in _MODAL_VARS}  # before the fake fixture points them at it
LIVE_REASON = (
    None
    if os.environ.get("MODAL_TOKEN_ID") and os.environ.get("MODAL_TOKEN_SECRET")
    else "live Modal tests need MODAL_TOKEN_ID and MODAL_TOKEN_SECRET"
)


@pytest.fixture(scope="module")
def live_ctx() -> Iterator[Context]:
    if LIVE_REASON:
        pytest.skip(LIVE_REASON)
    during = {k: os.environ.get(k) for k in _MODAL_VARS}
    set_environment(_ORIGINAL_ENV)  # Modal itself, not the fake
    provider = ModalCompute(app_name="praisonai-tests")
    info = _portal.call(provider.provision, {"idle_timeout_s": 300, "ttl_s": 1800})
    expr = f"{_MODULE}.ModalCompute(app_name='praisonai-tests')"
    try:
        yield Context(provider, info.instance_id, provider_expr=expr)
    finally:
        _portal.call(provider.shutdown, info.instance_id)
        set_environment(during)


@pytest.mark.parametrize("check", list(CHECKS))
def test_live_conformance(live_ctx: Context, check: str) -> None:
    run_check(TARGETS[PROVIDER], live_ctx, check)


def test_the_second_provision_starts_from_the_capture(
    provider: ModalCompute, home: object, fake: ModalFake
) -> None:
    definition = {"setup": ["echo ran >> /opt/setup-runs"], "env": {"API_TOKEN": "s3cret"}}
    first = _portal.call(provider.provision, definition).instance_id
    second = _portal.call(provider.provision, definition).instance_id
    try:
        for instance_id in (first, second):
            r = _portal.call(provider.execute, instance_id, "wc -l < /opt/setup-runs; echo $API_TOKEN")
            assert r.stdout.split() == ["1", "s3cret"], r
        assert fake.state.calls.get("TaskSnapshotFilesystem") == 1
        (snapshot,) = [ref for ref in fake.state.images.values() if "snapshot" in ref]
        inspect = ["docker", "image", "inspect", "--format", "{{json .Config.Env}}", snapshot]
        env = subprocess.run(inspect, capture_output=True, text=True).stdout
        assert "API_TOKEN=" in env and "s3cret" not in env  # no env value saved in the capture
    finally:
        for instance_id in (first, second):
            _portal.call(provider.shutdown, instance_id)


def test_a_retried_create_makes_one_sandbox(fake: ModalFake, provider: ModalCompute) -> None:
    cfg = ComputeConfig()
    info = _portal.call(provider.provision)
    try:
        again = _portal.call(
            provider._create, info.instance_id, cfg, {"praisonai.instance": info.instance_id}
        )
        assert again.metadata["sandbox_id"] == info.metadata["sandbox_id"]
        assert sum(b.name == info.instance_id for b in fake.state.boxes.values()) == 1
    finally:
        _portal.call(provider.shutdown, info.instance_id)


def test_another_process_resolves_relative_paths_in_the_working_dir(provider: ModalCompute) -> None:
    info = _portal.call(provider.provision, {"working_dir": "/srv/work"})
    try:
        _portal.call(provider.write_file, info.instance_id, "note.txt", b"here")
        other = ModalCompute(image=IMAGE)  # a new process's provider: no handle, no cache
        assert _portal.call(other.read_file, info.instance_id, "/srv/work/note.txt") == b"here"
        assert _portal.call(other.read_file, info.instance_id, "note.txt") == b"here"
    finally:
        _portal.call(provider.shutdown, info.instance_id)


def test_a_write_cut_half_way_leaves_the_old_file(fake: ModalFake, ctx: Context, tmp_path: Path) -> None:
    """The stream that carries a write's bytes is cut half-way (the fake's exec stdin ends there,
    as a lost connection): write_file (the helper used to rename the short file over the old one)
    and upload_file of one file (Modal's fs-tools wrote it in place) both fail, and the old file
    stays, with nothing left beside it."""
    p, i = ctx.provider, ctx.instance_id
    assert _portal.call(ctx.sh, "mkdir -p cut && printf old > cut/kept").ok
    source = tmp_path / "source"
    source.write_bytes(b"n" * 4000)
    for write in (
        lambda: p.write_file(i, "cut/kept", b"n" * 4000),
        lambda: p.upload_file(i, source, "cut/kept"),
    ):
        fake.state.stdin_budget = 1000
        try:
            with pytest.raises(PraisonAIError):
                _portal.call(write)
        finally:
            fake.state.stdin_budget = None
        assert _portal.call(ctx.sh, "ls -A cut; cat cut/kept").stdout == "kept\nold"
