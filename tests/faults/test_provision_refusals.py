"""A provision the provider refused before taking anything (no engine, no key, no kubeconfig)
leaves no ledger row: ``compute ps`` shows nothing afterwards, not an "unreachable" row forever.
Real providers, each pointed at what is missing; the command in a child process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import cast

import anyio
import pytest

from praisonai._errors import AuthenticationError, ProviderUnavailableError
from praisonai._ledger import Ledger
from praisonai.compute.base import ComputeProvider
from praisonai.compute.lifecycle import discard, owner_tag

#: The secrets and settings a case must not inherit from the machine running the tests.
_CLEARED = ("E2B_API_KEY", "DAYTONA_API_KEY", "DAYTONA_JWT_TOKEN", "MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET",
            "MODAL_SERVER_URL", "KUBECONFIG", "DOCKER_HOST")  # fmt: skip
CASES: list[tuple[str, str, dict[str, str], str]] = [
    ("dead engine", "docker", {"DOCKER_HOST": "unix:///nonexistent/docker.sock"}, "does not answer"),
    ("no key", "e2b", {}, "E2B_API_KEY"),
    ("no key", "daytona", {}, "DAYTONA_API_KEY"),
    ("no token", "modal", {"MODAL_SERVER_URL": "http://127.0.0.1:1"}, "MODAL_TOKEN_ID"),  # never leaves here
    ("no kubeconfig", "kubernetes", {"KUBECONFIG": "/nonexistent/kubeconfig"}, "Kubernetes configuration"),
]


@pytest.mark.parametrize(
    ("provider", "extra", "fragment"), [c[1:] for c in CASES], ids=[f"{c[1]}, {c[0]}" for c in CASES]
)
def test_a_refused_provision_leaves_no_ledger_row(
    home: Path, provider: str, extra: dict[str, str], fragment: str
) -> None:
    env = {k: v for k, v in os.environ.items() if k not in _CLEARED}
    env.update(PRAISONAI_HOME=str(home), **extra)

    def praisonai(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "praisonai", *args], capture_output=True, text=True,
                              env=env, timeout=120, stdin=subprocess.DEVNULL)  # fmt: skip

    r = praisonai("sandbox", "run", "-c", provider, "--no-environment", "--", "true")
    assert r.returncode == 125 and fragment in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert list(Ledger.default().entries()) == []
    ps = praisonai("compute", "ps", "--json")
    assert ps.returncode == 0, ps.stderr
    # ps also lists what the engine holds for other homes (other tests' containers): only this
    # provider's rows can be this refusal's
    assert [row for row in json.loads(ps.stdout) if row["provider"] == provider] == [], ps.stdout


class _LostEngine:
    """A provider whose engine stops answering once the create was sent: removal fails too."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    async def _destroy(self, instance_id: str) -> bool:
        raise self.error


@pytest.mark.parametrize(
    ("failure", "removal", "left"),
    [
        (TimeoutError("the create timed out"), ProviderUnavailableError("gone", op="docker"), ["failed"]),
        (
            ProviderUnavailableError("reset", op="docker"),
            ProviderUnavailableError("gone", op="docker"),
            ["failed"],
        ),
        (AuthenticationError("no key", op="provision"), AuthenticationError("no key", op="destroy"), []),
        (AuthenticationError("no key", op="provision"), TimeoutError("no answer"), ["failed"]),
    ],
    ids=["timeout after send", "connection lost mid-call", "refused twice", "refused, then no answer"],
)
@pytest.mark.usefixtures("home")
def test_only_a_definite_refusal_drops_the_row(
    failure: Exception, removal: Exception, left: list[str]
) -> None:
    """At most once and no leak: the row goes only when nothing can exist; an unknown outcome
    keeps a ``failed`` row that ``stop`` and ``gc`` reconcile."""
    ledger = Ledger.default()
    ledger.record("docker_0000000000aa", "docker", {}, owner_tag(), time.time())
    anyio.run(discard, cast(ComputeProvider, _LostEngine(removal)), "docker_0000000000aa", ledger, failure)
    assert [entry.state for entry in ledger.entries()] == left
