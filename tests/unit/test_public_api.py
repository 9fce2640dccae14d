"""The public namespace: everything in __all__ resolves, and importing it stays light."""

from __future__ import annotations

import subprocess
import sys

import pytest

import praisonai


def test_every_public_name_resolves() -> None:
    for name in praisonai.__all__:
        assert getattr(praisonai, name) is not None


def test_import_is_lazy() -> None:
    heavy = "('pydantic', 'anyio', 'docker', 'typer')"
    code = f"import praisonai, sys; print(sorted(m for m in {heavy} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


#: What ``from praisonai import Sandbox`` must leave unloaded: vendor SDKs, docker-py and its
#: requests, pydantic (the config models), rich, typer, PyYAML, the event loop's asyncio and
#: anyio, and the providers' machinery (``praisonai.compute``: registry, ledger, channels).
#: Each loads when a call first needs it.
_HEAVY = (
    "asyncio",
    "anyio",
    "pydantic",
    "pydantic_core",
    "rich",
    "typer",
    "yaml",
    "docker",
    "requests",
    "e2b",
    "modal",
    "daytona",
    "httpx",
    "paramiko",
    "asyncssh",
    "anthropic",
    "kubernetes",
    "praisonai.compute",
)


@pytest.mark.parametrize("name", ["Sandbox", "AsyncSandbox"])
def test_sandbox_import_leaves_heavy_modules_out(name: str) -> None:
    code = (
        f"import sys; from praisonai import {name}; print({name}.__name__); "
        f"print(sorted(m for m in sys.modules if m.startswith({_HEAVY!r})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split("\n")[:2] == [name, "[]"]


def test_exec_result_reads_like_a_dict() -> None:
    r = praisonai.ExecResult(stdout="o", stderr="e", exit_code=2)
    assert (r["stdout"], r["stderr"], r["exit_code"], r.get("nope", 1)) == ("o", "e", 2, 1)
    assert dict((k, r[k]) for k in r.keys()) == {"stdout": "o", "stderr": "e", "exit_code": 2}  # noqa: SIM118
