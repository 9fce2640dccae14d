"""Observability: the ``praisonai`` logger's lines (the CLI's -v) and OpenTelemetry spans with the
instance and session ids, read back with the SDK's in-memory exporter, around real local work."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from praisonai import Sandbox, _telemetry


@pytest.fixture
def spans(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """The spans this test makes, through a tracer provider of its own handed to praisonai's
    telemetry (the process's global provider is left alone: later tests trace nothing)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with warnings.catch_warnings():  # the SDK's own get_tracer uses its deprecated InstrumentationInfo
        warnings.simplefilter("ignore", DeprecationWarning)
        tracer = provider.get_tracer("praisonai")
    monkeypatch.setattr(_telemetry, "_tracer", [tracer])
    yield exporter
    provider.shutdown()


def test_provision_exec_and_transfers_are_spans_with_the_instance_id(
    spans: InMemorySpanExporter, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("a")
    with Sandbox.create("local") as sb:
        sb.exec("echo hi")
        sb.upload(tmp_path / "a.txt", "a.txt")
        sb.download("a.txt", tmp_path / "b.txt")
        instance_id = sb.id
    by_name = {s.name: s for s in spans.get_finished_spans()}
    assert {"praisonai.provision", "praisonai.exec", "praisonai.upload", "praisonai.download"} <= set(by_name)
    for name in ("praisonai.provision", "praisonai.exec", "praisonai.upload", "praisonai.download"):
        attributes = by_name[name].attributes or {}
        assert (attributes["praisonai.instance_id"], attributes["praisonai.provider"]) == (
            instance_id,
            "local",
        )


def test_v_and_praisonai_log_show_what_praisonai_does_on_stderr(home: Path) -> None:
    argv = [sys.executable, "-c", "from praisonai.cli import main; main()", "sandbox", "run", "-c", "local"]

    def run(*flags: str, level: str = "") -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PRAISONAI_LOG": level}
        return subprocess.run(
            [*argv, *flags, "--", "echo", "-v"], capture_output=True, text=True, timeout=120, env=env
        )

    shown = run("-v")
    assert shown.stdout == "-v\n", shown.stderr  # the command's own -v stays its own
    assert "INFO praisonai.lifecycle: provisioned local_" in shown.stderr
    assert "INFO praisonai.compute: shut down local_" in shown.stderr
    assert "INFO" not in run().stderr
    assert "INFO praisonai.lifecycle: provisioned local_" in run(level="info").stderr


def test_a_sessions_stored_events_are_otel_events_without_their_content(
    spans: InMemorySpanExporter, tmp_path: Path
) -> None:
    from praisonai.compute.lifecycle import owner_tag
    from praisonai.managed.events import Event, text_content
    from praisonai.managed.store import SqliteSessionStore
    from praisonai.managed.testing import CONFIG

    said = Event("user.message", {"content": text_content("a secret prompt")})
    with SqliteSessionStore(tmp_path / "sessions.db") as store:
        _, lease = store.create_session(store.upsert_agent("local", "coder", CONFIG), owner_tag())
        with _telemetry.span("turn"):
            store.append(lease, [said], turn=1)
    (turn,) = spans.get_finished_spans()
    assert turn.name == "praisonai.turn"
    (exported,) = turn.events
    assert exported.name == "praisonai.user.message"
    assert dict(exported.attributes or {}) == {
        "praisonai.session_id": lease.session_id,
        "praisonai.event_id": said.id,
    }


@pytest.mark.usefixtures("docker_ok")
def test_vv_shows_each_vendor_call(home: Path) -> None:
    argv = [sys.executable, "-c", "from praisonai.cli import main; main()", "sandbox", "run", "-vv"]
    r = subprocess.run([*argv, "-c", "docker", "--", "true"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "DEBUG praisonai.docker: docker call: " in r.stderr, r.stderr
