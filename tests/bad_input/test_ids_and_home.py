"""Bad instance ids, an unusable PRAISONAI_HOME and a damaged ledger: each gets one clear sentence,
a non-zero exit (CLI) or an error from our tree (API), no traceback, and changes nothing."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

import praisonai
from praisonai._errors import InvalidInstanceIdError, PraisonAIError
from praisonai._ledger import Ledger
from praisonai.compute.providers.local import LocalCompute
from praisonai.sandbox import Sandbox

_REPO = Path(praisonai.__file__).parents[1]
_LOCAL_FORM = "is not an instance id of the local provider: ids look like local_<12 hex digits>"
_ANY_FORM = "is not an instance id: ids look like <provider>_<12 hex digits>"


def cli(*args: str, home: Path | str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRAISONAI_HOME": str(home), "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    return subprocess.run(
        [sys.executable, "-c", "from praisonai.cli import main; main()", *args],
        capture_output=True, text=True, timeout=120, cwd=_REPO, env=env,
    )  # fmt: skip


def tree(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` and the bytes of its files: what "nothing changed" compares."""
    if not root.exists():
        return {}
    return {
        str(p.relative_to(root)): p.read_bytes() if p.is_file() else None for p in sorted(root.rglob("*"))
    }


def one_clear_line(r: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("error: "), r.stderr
    for fragment in fragments:
        assert fragment in r.stderr, r.stderr


# ---- instance ids: Python API -------------------------------------------------------------------

BAD_IDS = [
    ("", _LOCAL_FORM),
    ("local", _LOCAL_FORM),
    ("local_", _LOCAL_FORM),
    ("local_0123456789a", _LOCAL_FORM),  # 11 digits
    ("local_0123456789abc", _LOCAL_FORM),  # 13 digits
    ("local_0123456789AB", _LOCAL_FORM),  # upper case: not what provision makes
    ("LOCAL_0123456789ab", _LOCAL_FORM),
    ("local-0123456789ab", _LOCAL_FORM),
    ("local_0123456789ab/", _LOCAL_FORM),
    ("local_0123456789ab\x00", _LOCAL_FORM),
    (" local_0123456789ab", _LOCAL_FORM),
    ("docker_0123456789ab", _LOCAL_FORM),  # another provider's
    ("..", _LOCAL_FORM),
    ("/etc", _LOCAL_FORM),
    (5, _LOCAL_FORM),
    (None, _LOCAL_FORM),
    (b"local_0123456789ab", _LOCAL_FORM),
]


@pytest.mark.parametrize(("bad_id", "message"), BAD_IDS)
@pytest.mark.parametrize("entry_point", ["shutdown", "get_status", "execute", "write_file"])
def test_the_api_refuses_a_bad_id(home: Path, bad_id: object, message: str, entry_point: str) -> None:
    provider = LocalCompute()
    before = tree(home)
    calls = {
        "shutdown": lambda: provider.shutdown(bad_id),  # type: ignore[arg-type]
        "get_status": lambda: provider.get_status(bad_id),  # type: ignore[arg-type]
        "execute": lambda: provider.execute(bad_id, "true"),  # type: ignore[arg-type]
        "write_file": lambda: provider.write_file(bad_id, "f", b"x"),  # type: ignore[arg-type]
    }

    async def call() -> None:
        await calls[entry_point]()

    with pytest.raises(InvalidInstanceIdError, match="ids look like") as caught:
        anyio.run(call)
    assert message in str(caught.value) and isinstance(caught.value, ValueError)
    assert tree(home) == before


@pytest.mark.parametrize(
    "bad_id",
    ["nope", "/tmp/x", "docker_../../x", "docker_0123456789ab/..", "_0123456789ab", "9x_0123456789ab"],
)
def test_connect_refuses_a_bad_id(home: Path, bad_id: str) -> None:
    with pytest.raises(InvalidInstanceIdError, match=rf"^{bad_id!r} {_ANY_FORM}"):
        Sandbox.connect(bad_id)
    assert tree(home) == {}


# ---- instance ids: CLI ----------------------------------------------------------------------------


@pytest.mark.parametrize("bad_id", ["nope", "../x", "/tmp", "docker_XYZ", "local_0123456789ab/.."])
def test_stop_refuses_a_bad_id_before_doing_anything(home: Path, bad_id: str) -> None:
    Ledger.default().record("local_0123456789ab", "local", {}, "someone@elsewhere:1", 1.0)
    before = tree(home)
    r = cli("compute", "stop", "local_0123456789ab", bad_id, home=home)
    one_clear_line(r, f"{bad_id!r} {_ANY_FORM}")
    assert r.returncode == 2 and r.stdout == "" and tree(home) == before


# ---- an unusable PRAISONAI_HOME ----------------------------------------------------------------


@contextlib.contextmanager
def unusable_home(kind: str, tmp: Path) -> Iterator[Path]:
    if kind == "a file in its path":
        (tmp / "file").write_text("")
        yield tmp / "file" / "home"
    elif kind == "a file":
        (tmp / "file").write_text("")
        yield tmp / "file"
    elif kind == "under /proc":
        yield Path("/proc/praisonai-home")
    elif kind == "/proc itself":
        yield Path("/proc")
    elif kind == "a read-only mount":
        (tmp / "ro").mkdir()
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(tmp / "ro")])
        if mounted.returncode != 0:
            pytest.skip("cannot mount a read-only tmpfs here (needs root)")
        try:
            yield tmp / "ro"
        finally:
            subprocess.run(["umount", str(tmp / "ro")], check=True)


HOME_KINDS = ["a file in its path", "a file", "under /proc", "/proc itself", "a read-only mount"]
COMMANDS = [
    ("compute", "ps"),
    ("compute", "gc"),
    ("compute", "stop", "--all"),
    ("sandbox", "run", "-c", "local", "--", "true"),
]


@pytest.mark.parametrize("kind", HOME_KINDS)
@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_an_unusable_home_is_one_sentence_naming_it(
    tmp_path: Path, kind: str, command: tuple[str, ...]
) -> None:
    with unusable_home(kind, tmp_path) as home:
        before = tree(tmp_path)
        r = cli(*command, home=home)
        one_clear_line(
            r, f"PRAISONAI_HOME {home} cannot be used (", "set PRAISONAI_HOME to a writable directory"
        )
        assert tree(tmp_path) == before


# ---- a damaged ledger -----------------------------------------------------------------------------


def _damage(home: Path, how: str) -> Path:
    path = home / "ledger.sqlite3"
    home.mkdir(parents=True)
    if how == "random bytes":
        path.write_bytes(os.urandom(8192))
    else:  # a real database whose first page (the schema) was overwritten after its header
        with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:
            db.execute("CREATE TABLE instances (instance_id TEXT PRIMARY KEY, spec TEXT)")
            db.execute("INSERT INTO instances VALUES ('local_0123456789ab', '{}')")
        data = path.read_bytes()
        path.write_bytes(data[:100] + b"\xff" * (4096 - 100) + data[4096:])
    return path


@pytest.mark.parametrize("how", ["random bytes", "overwritten pages"])
@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_damaged_ledger_is_refused_and_never_overwritten(
    tmp_path: Path, how: str, command: tuple[str, ...]
) -> None:
    home = tmp_path / "home"
    path = _damage(home, how)
    before = path.read_bytes()
    r = cli(*command, home=home)
    one_clear_line(r, f"the ledger {path} is damaged", f"mv {path} {path}.damaged")
    assert path.read_bytes() == before


def test_ps_reports_each_unreadable_row_once_and_lists_the_others(home: Path) -> None:
    ledger = Ledger.default()
    ledger.record("local_000000000001", "local", {}, "someone@elsewhere:1", 1.0)
    ledger.record("local_000000000002", "local", {}, "someone@elsewhere:1", 2.0)
    ledger.record("local_000000000003", "local", {}, "someone@elsewhere:1", 3.0)
    with sqlite3.connect(ledger.path) as db:
        db.execute("UPDATE instances SET spec = x'00ff' WHERE instance_id = 'local_000000000002'")
        db.execute("UPDATE instances SET owner = x'07' WHERE instance_id = 'local_000000000003'")
    r = cli("compute", "ps", "--json", home=home)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("error: skipped row ") for line in lines)
    assert "('local_000000000002')" in lines[0] and "its spec is not JSON" in lines[0]
    assert "('local_000000000003')" in lines[1] and "owner is not text" in lines[1]
    assert [row["instance"] for row in json.loads(r.stdout)] == ["local_000000000001"]


def test_errors_here_are_in_the_tree() -> None:
    assert issubclass(InvalidInstanceIdError, PraisonAIError) and issubclass(
        InvalidInstanceIdError, ValueError
    )
