"""Bad input to exec and to the helper's file operations (issue 11, defects 21, 22): one clear
sentence from the error tree (or the builtin it extends), and nothing changed — the workspace is
as it was and the helper that served the call still runs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kit import Instance, provisioned

from praisonai import _portal
from praisonai._errors import ConfigError, PathNotFoundError
from praisonai.compute.base import ComputeProvider
from praisonai.compute.providers.local import LocalCompute

#: The workspace every case starts from: a file, a directory, a FIFO and a link to a device.
_SETUP = "rm -rf ./* && echo kept > file && mkdir dir && mkfifo fifo && ln -s /dev/zero zero"
_LISTING = "ls -la --time-style=+ . dir | sed 's/  */ /g'; cat file"

# (providers, operation, arguments, error type, message fragment)
CASES: list[tuple[str, str, tuple[Any, ...], type[BaseException], str]] = [
    ("docker ssh local", "read_file", ("fifo",), ConfigError, "not a regular file"),
    ("docker ssh", "read_file", ("zero",), ConfigError, "not a regular file"),
    ("docker", "read_file", ("/dev/zero",), ConfigError, "not a regular file"),
    ("docker", "read_file", ("/dev/stdin",), ConfigError, "not a regular file"),
    ("docker ssh local", "read_file", (".",), IsADirectoryError, "is a directory"),
    ("docker ssh local", "read_file", ("dir",), IsADirectoryError, "is a directory"),
    ("docker ssh local", "read_file", ("missing",), PathNotFoundError, "no such file"),
    ("docker", "read_file", ("file/sub",), NotADirectoryError, "not a directory"),
    ("docker", "write_file", ("", b"x"), IsADirectoryError, "is a directory"),
    ("docker", "write_file", (".", b"x"), IsADirectoryError, "is a directory"),
    ("docker", "write_file", ("dir", b"x"), IsADirectoryError, "is a directory"),
    ("docker", "write_file", ("/workspace", b"x"), IsADirectoryError, "is a directory"),
    ("docker", "write_file", ("fifo", b"x"), ConfigError, "not a regular file"),
    ("docker", "write_file", ("zero", b"x"), ConfigError, "not a regular file"),
    ("docker", "write_file", ("file/sub", b"x"), NotADirectoryError, "not a directory"),
    ("docker ssh", "execute", ("echo x", None, "missing-dir"), PathNotFoundError, "does not exist"),
    ("docker ssh", "execute", ("echo \0 x",), ConfigError, "NUL"),
    ("docker ssh local", "start_process", ("echo x", "missing-dir"), PathNotFoundError, "does not exist"),
]


@pytest.fixture(scope="module")
def local_instance() -> Iterator[Instance]:
    yield from provisioned(LocalCompute())


def _call(provider: ComputeProvider, iid: str, operation: str, args: tuple[Any, ...]) -> None:
    if operation == "execute":
        command, timeout, cwd = (*args, None, None)[:3]
        _portal.call(lambda: provider.execute(iid, command, timeout or 30, cwd=cwd))
    elif operation == "start_process":
        command, cwd = args
        _portal.call(lambda: provider.processes.start(iid, command, cwd=cwd))
    else:
        _portal.call(getattr(provider, operation), iid, *args)


def _params() -> Iterator[Any]:
    for providers, operation, args, error, fragment in CASES:
        for name in providers.split():
            yield pytest.param(name, operation, args, error, fragment, id=f"{name}-{operation}-{args[0]!r}")


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("provider_name", "operation", "args", "error", "fragment"), list(_params()))
def test_bad_input_is_refused_and_changes_nothing(
    request: pytest.FixtureRequest,
    provider_name: str,
    operation: str,
    args: tuple[Any, ...],
    error: type[BaseException],
    fragment: str,
) -> None:
    provider, iid = request.getfixturevalue(f"{provider_name}_instance")
    _portal.call(provider.execute, iid, _SETUP)
    before = _portal.call(provider.execute, iid, _LISTING).stdout
    helper = _portal.call(provider._channels.get, iid).helper_pid
    with pytest.raises(error, match=fragment) as caught:
        _call(provider, iid, operation, args)
    assert "\n" not in str(caught.value), "one sentence, no traceback in the message"
    assert _portal.call(provider.execute, iid, _LISTING).stdout == before, "the workspace changed"
    assert _portal.call(provider._channels.get, iid).helper_pid == helper, "the helper died"
