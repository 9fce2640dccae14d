"""Users' code type-checks against the library under ``mypy --strict``: the package's names are
explicit re-exports and the blocking handles are typed (not ``Any``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

_USER_CODE = """
from praisonai import ChannelClosedError, ExecResult, PraisonAIError, Sandbox

def main() -> None:
    with Sandbox.create("local") as sb:
        result: ExecResult = sb.exec("echo hi")
        code: int | None = sb.start("sleep 1").wait(timeout=2).exit_code
        with sb.session() as shell:
            out: str = shell.run("pwd").stdout
        with sb.pty("echo") as term:
            chunks: list[bytes] = list(term)
        print(result, code, out, chunks)
    try:
        main()
    except ChannelClosedError as exc:
        print(exc.retryable)
    except PraisonAIError as exc:
        print(exc)
"""


def test_users_code_type_checks_under_mypy_strict_from_a_folder_of_its_own(tmp_path: Path) -> None:
    """After the README's install, a user's typed file in a folder of its own finds ``praisonai``
    with no PYTHONPATH (the editable install is a static path in site-packages, setuptools'
    ``editable_mode=compat``, not its default import hook, which type checkers and IDEs cannot
    follow), and its calls type-check. One mypy run for both: each costs half a minute of CPU."""
    user = tmp_path / "user.py"
    user.write_text(_USER_CODE)
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "user.py"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin"},  # no PYTHONPATH: what the install put in site-packages only
    )
    assert checked.returncode == 0, (
        "install praisonai as the README does (pip install -e . --config-settings editable_mode=compat)\n"
        + checked.stdout
        + checked.stderr
    )


def test_every_public_member_of_the_sandboxes_has_a_docstring() -> None:
    """``help(Sandbox)`` and an editor's hover say what each member does, the blocking twin too."""
    import inspect

    from praisonai import AsyncSandbox, Sandbox

    bare = [
        f"{cls.__name__}.{name}"
        for cls in (Sandbox, AsyncSandbox)
        for name, member in inspect.getmembers(cls)
        if not name.startswith("_") and not inspect.getdoc(member)
    ]
    assert bare == []
