"""What names a home: a random key in ``home.key`` (0600), of which instances carry only a hash.
Not its path (a home made again at the same path is another home); one key however many
processes make it at once; a key file that is not safe to trust is refused in one sentence."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from praisonai._errors import HomeUnusableError
from praisonai._home import KEY_FILE, home_tag


def test_a_home_is_named_by_its_key_not_by_its_path(tmp_path: Path) -> None:
    home = tmp_path / "home"
    tag = home_tag(home)
    key = home / KEY_FILE
    assert home_tag(home) == tag and len(tag) == 32
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    path_hash = hashlib.sha256(str(home.resolve()).encode()).hexdigest()
    assert tag not in key.read_text() and not path_hash.startswith(tag[:12])
    assert home_tag(tmp_path / "other") != tag
    shutil.rmtree(home)  # made again at the same path: another home
    assert home_tag(home) != tag


def test_processes_making_the_key_at_once_agree_on_one(tmp_path: Path) -> None:
    home, start = tmp_path / "home", threading.Barrier(8)
    tags: list[str] = []

    def make() -> None:
        start.wait()
        tags.append(home_tag(home))

    threads = [threading.Thread(target=make) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(tags) == 8 and len(set(tags)) == 1
    assert sorted(p.name for p in home.iterdir()) == [KEY_FILE]  # no temporary file left


def _readable_by_others(key: Path) -> None:
    key.chmod(0o644)


def _damaged(key: Path) -> None:
    key.write_text("not a key")


def _a_link(key: Path) -> None:
    copy = key.with_name("elsewhere")
    shutil.copy(key, copy)
    key.unlink()
    key.symlink_to(copy)


def _a_fifo(key: Path) -> None:
    key.unlink()
    os.mkfifo(key, 0o600)


@pytest.mark.parametrize(
    ("spoil", "why"),
    [
        (_readable_by_others, "is readable or writable by others (chmod 600"),
        (_damaged, "is damaged"),
        (_a_link, "cannot be read"),
        (_a_fifo, "is not a regular file"),
    ],
)
def test_a_key_file_that_cannot_be_trusted_is_refused_in_one_sentence(
    tmp_path: Path, spoil: Callable[[Path], None], why: str
) -> None:
    home = tmp_path / "home"
    home_tag(home)
    spoil(home / KEY_FILE)
    with pytest.raises(HomeUnusableError) as caught:
        home_tag(home)
    message = str(caught.value)
    assert f"the key of the praisonai home, {home / KEY_FILE}, {why}" in message, message
    assert "use another PRAISONAI_HOME" in message and "\n" not in message
