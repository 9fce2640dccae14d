import dataclasses

import pytest

import praisonai.compute
from praisonai._limits import DEFAULT_EXEC_TIMEOUT_S, DEFAULT_MAX_OUTPUT_BYTES
from praisonai._output import OutputBuffer, exec_result
from praisonai._types import ExecRequest, ExecResult


def test_keeps_head_and_tail_within_bound() -> None:
    buf = OutputBuffer(100)
    buf.write(b"H" * 50)
    for _ in range(10_000):
        buf.write(b"x" * 97)
    buf.write(b"T" * 50)
    text = buf.text()
    assert buf.truncated and text.startswith("H" * 50) and text.endswith("T" * 50)
    assert "bytes of output truncated" in text and len(text) < 200


def test_short_output_is_untouched() -> None:
    buf = OutputBuffer(100)
    buf.write(b"hello\n")
    assert not buf.truncated and buf.text() == "hello\n"


def test_a_timed_out_result_says_so_whatever_the_kill_left() -> None:
    out, err = OutputBuffer(100), OutputBuffer(100)
    out.write(b"partial\n")
    for code in (None, 137, 0):
        r = exec_result(code, out, err, timed_out=True)
        assert (r.stdout, r.exit_code, r.timed_out, r.truncated) == ("partial\n", 124, True, False), r


def test_a_result_is_truncated_when_either_stream_is() -> None:
    out, err = OutputBuffer(10), OutputBuffer(10)
    err.write(b"e" * 100)
    r = exec_result(3, out, err)
    assert (r.exit_code, r.timed_out, r.truncated, r.stdout) == (3, False, True, "")
    assert exec_result(0) == ExecResult("", "", 0)  # output that went to a sink only


def test_a_result_without_a_timeout_needs_an_exit_code() -> None:
    with pytest.raises(ValueError):
        exec_result(None)


def test_an_exec_request_defaults_to_the_contract_and_is_copied_not_changed() -> None:
    request = ExecRequest("true")
    assert (request.cwd, dict(request.env), request.stdin, request.on_output) == (None, {}, None, None)
    assert (request.timeout, request.max_output) == (DEFAULT_EXEC_TIMEOUT_S, DEFAULT_MAX_OUTPUT_BYTES)
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.cwd = "/"  # type: ignore[misc]
    assert dataclasses.replace(request, cwd="/w").cwd == "/w" and request.cwd is None
    assert ExecRequest is praisonai.compute.ExecRequest
