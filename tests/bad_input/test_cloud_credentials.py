"""The cloud providers' setup mistakes through the command: one sentence naming what to do, no
traceback. Missing credentials name the variable to set; an unreachable vendor says so."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

pytestmark = pytest.mark.usefixtures("home")  # a refused provision's ledger row stays in the test's home

CREDENTIALS = (
    "E2B_API_KEY", "MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET", "DAYTONA_API_KEY", "DAYTONA_JWT_TOKEN",
    "TENKI_API_KEY", "TENKI_AUTH_TOKEN",
)  # fmt: skip


def run(compute: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in CREDENTIALS and not k.startswith("MODAL_")}
    return subprocess.run(
        [sys.executable, "-c", "from praisonai.cli import main; main()",
         "sandbox", "run", "--compute", compute, "--no-environment", "--", "true"],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        env={**clean, "MODAL_CONFIG_PATH": "/nonexistent/.modal.toml", **env},
    )  # fmt: skip


def one_sentence(r: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert r.returncode != 0, r
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    for fragment in fragments:
        assert fragment in r.stderr, r.stderr


@pytest.mark.parametrize(
    ("compute", "variables"),
    [
        ("e2b", ("E2B_API_KEY",)),
        ("modal", ("MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET")),
        ("daytona", ("DAYTONA_API_KEY",)),
        ("tenki", ("TENKI_API_KEY", "TENKI_AUTH_TOKEN")),
    ],
)
def test_missing_credentials_name_the_variable(compute: str, variables: tuple[str, ...]) -> None:
    pytest.importorskip(compute)
    one_sentence(run(compute), *variables)


def test_an_unreachable_e2b_says_so() -> None:
    pytest.importorskip("e2b")
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        url = f"http://127.0.0.1:{closed.getsockname()[1]}"
        r = run("e2b", E2B_API_KEY="e2b_" + "0" * 40, E2B_API_URL=url, E2B_SANDBOX_URL=url)
    one_sentence(r, "E2B could not be reached")


# ---- Fly.io (no SDK: httpx) --------------------------------------------------------------------


def run_fly(**env: str) -> subprocess.CompletedProcess[str]:
    """``run("flyio")`` with no FLY_* variable of this machine, only ``env``'s."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("FLY_")}
    return subprocess.run(
        [sys.executable, "-c", "from praisonai.cli import main; main()",
         "sandbox", "run", "--compute", "flyio", "--no-environment", "--", "true"],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, env={**clean, **env},
    )  # fmt: skip


def test_fly_missing_token_and_app_name_the_variable() -> None:
    pytest.importorskip("httpx")
    one_sentence(run_fly(), "FLY_API_TOKEN")
    one_sentence(run_fly(FLY_API_TOKEN="t"), "FLY_APP_NAME")


def test_a_rejected_fly_token_is_one_sentence() -> None:
    pytest.importorskip("httpx")
    from fakes.flyio import FlyioFake

    with FlyioFake(token="the-right-one") as fake:  # answers 401 before any machine (no docker needed)
        r = run_fly(FLY_API_TOKEN="a-wrong-one", FLY_APP_NAME="praisonai-test", FLY_API_HOSTNAME=fake.api_url)
    one_sentence(r, "401", "check FLY_API_TOKEN")


def test_an_unreachable_fly_says_so() -> None:
    pytest.importorskip("httpx")
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}"
        r = run_fly(FLY_API_TOKEN="t", FLY_APP_NAME="praisonai-test", FLY_API_HOSTNAME=url)
    one_sentence(r, "Fly.io could not be reached")


def test_a_tenki_key_of_the_wrong_shape_says_what_it_must_look_like() -> None:
    pytest.importorskip("tenki")
    one_sentence(run("tenki", TENKI_API_KEY="sk-not-a-tenki-key"), "must start with tk_")


def test_a_tenki_key_tenki_refuses_says_so() -> None:
    pytest.importorskip("tenki")
    from fakes.tenki import TenkiFake

    with TenkiFake() as fake:  # a real gRPC server that refuses every key but tk_fake
        r = run("tenki", TENKI_API_KEY="tk_revoked", TENKI_API_ENDPOINT=fake.base_url)
    one_sentence(r, "Tenki refused the API key", "TENKI_API_KEY")
