"""Clients that misbehave at the HTTP level, as an attacker's script would: raw sockets that send
half a request and stop, trickle it a byte at a time, open too many connections, or send a body
that is not JSON or far too large. The server runs with short bounds (``ClientLimits``), so each
test takes about a second; the defaults are the same code with larger numbers."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from praisonai.dashboard import ClientLimits, Dashboard
from praisonai.dashboard._body import JSON_MAX_BYTES

#: The bounds the server runs with here, and how long past one a close may take on a busy machine.
SHORT = ClientLimits(head_s=0.5, body_pause_s=0.5, connections=100)
MARGIN_S = 5.0


@pytest.fixture
def board(home: Path) -> Iterator[Dashboard]:
    with Dashboard(limits=SHORT) as served:
        yield served


def _connect(board: Dashboard) -> socket.socket:
    return socket.create_connection(("127.0.0.1", board.port), timeout=10)


def _closed_by(sock: socket.socket, deadline: float) -> bool:
    """Whether the server closes ``sock`` before ``deadline`` (what it sends first is read past)."""
    while (left := deadline - time.monotonic()) > 0:
        sock.settimeout(left)
        try:
            if sock.recv(65536) == b"":
                return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False
    return False


def _answer(sock: socket.socket) -> str:
    """One whole response read from ``sock`` (its head, then its ``Content-Length`` of body)."""
    sock.settimeout(10)
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536) or pytest.fail(f"closed before a whole answer: {data!r}")
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.lower().split(b"\r\n")
    length = next(int(line[15:]) for line in lines if line.startswith(b"content-length:"))
    while len(body) < length:
        body += sock.recv(65536) or pytest.fail(f"closed before a whole answer: {data!r}")
    return (head + b"\r\n\r\n" + body).decode("latin-1")


def _signed_in(board: Dashboard) -> str:
    """The headers of a request from the page: the cookie and the state-change header."""
    return (
        f"Host: 127.0.0.1:{board.port}\r\n"
        f"Cookie: praisonai_dashboard_{board.port}={board.access.cookie_value}\r\n"
        f"x-praisonai-token: {board.access.header_token}\r\n"
    )


def _about(board: Dashboard) -> httpx.Response:
    cookies = {f"praisonai_dashboard_{board.port}": board.access.cookie_value}
    key = {"x-praisonai-token": board.access.header_token}
    return httpx.get(f"http://127.0.0.1:{board.port}/api/about", cookies=cookies, headers=key, timeout=10)


def test_half_sent_requests_are_closed_and_others_are_served_meanwhile(board: Dashboard) -> None:
    slow = [_connect(board) for _ in range(50)]
    try:
        for sock in slow:
            sock.sendall(b"GET /api/ab")  # half a request line, then nothing
        assert _about(board).json()["version"]
        deadline = time.monotonic() + SHORT.head_s + MARGIN_S
        still_open = [sock for sock in slow if not _closed_by(sock, deadline)]
        assert not still_open, f"{len(still_open)} of 50 half-sent requests still open"
    finally:
        for sock in slow:
            sock.close()


def test_a_head_trickled_a_byte_at_a_time_is_closed_at_its_deadline(board: Dashboard) -> None:
    """Each byte used to restart uvicorn's only timer: the head's deadline does not move."""
    head = f"GET /api/about HTTP/1.1\r\nHost: 127.0.0.1:{board.port}\r\nX-Pad: {'a' * 4096}"
    deadline = time.monotonic() + SHORT.head_s + MARGIN_S
    with _connect(board) as sock:
        for byte in head.encode():
            sock.sendall(bytes([byte]))
            if _closed_by(sock, min(deadline, time.monotonic() + 0.05)):
                return
        pytest.fail("the trickled head was still open at its deadline")


def test_a_body_that_stops_coming_is_closed(board: Dashboard) -> None:
    with _connect(board) as sock:
        sock.sendall(
            f"POST /api/sessions/msess_x/resume HTTP/1.1\r\n{_signed_in(board)}"
            'Content-Length: 1000\r\n\r\n{"prompt": '.encode()
        )
        assert _closed_by(sock, time.monotonic() + SHORT.body_pause_s + MARGIN_S)
    assert _about(board).status_code == 200


def test_a_refused_body_cannot_hold_the_connection(board: Dashboard) -> None:
    """No cookie: refused at once, body unread; the client keeps sending it, a byte at a time."""
    with _connect(board) as sock:
        head = f"POST /api/about HTTP/1.1\r\nHost: 127.0.0.1:{board.port}\r\nContent-Length: 100000\r\n\r\n"
        sock.sendall(head.encode())
        deadline = time.monotonic() + SHORT.head_s + MARGIN_S
        while time.monotonic() < deadline:
            try:
                sock.sendall(b"x")
            except (ConnectionResetError, BrokenPipeError):
                return
            if _closed_by(sock, min(deadline, time.monotonic() + 0.05)):
                return
        pytest.fail("the refused request's body held its connection past the deadline")


def test_connections_past_the_cap_are_closed_at_once(home: Path) -> None:
    capped = ClientLimits(head_s=60.0, body_pause_s=60.0, connections=10)
    with Dashboard(limits=capped) as board:
        held = [_connect(board) for _ in range(15)]
        try:
            deadline = time.monotonic() + MARGIN_S  # far below the head's 60 s
            closed = [sock for sock in held if _closed_by(sock, min(deadline, time.monotonic() + 0.2))]
            assert len(closed) == 5
        finally:
            for sock in held:
                sock.close()


def _resume(board: Dashboard, body: bytes) -> httpx.Response:
    url = f"http://127.0.0.1:{board.port}/api/sessions/msess_nope/resume"
    cookies = {f"praisonai_dashboard_{board.port}": board.access.cookie_value}
    headers = {"x-praisonai-token": board.access.header_token, "content-type": "application/json"}
    return httpx.post(url, content=body, cookies=cookies, headers=headers, timeout=30)


@pytest.mark.parametrize(
    "body",
    [b"not json", b"\xff\xfe", b'["prompt"]', b"[" * 100_000, b""],
    ids=["text", "not-utf8", "array", "nested-100000-deep", "empty"],
)
def test_a_body_that_is_not_a_json_object_is_one_sentence(board: Dashboard, body: bytes) -> None:
    answer = _resume(board, body)
    assert answer.status_code == 400 and "must be a JSON object" in answer.text, answer.text


def test_a_huge_body_is_refused_before_it_is_read(board: Dashboard) -> None:
    """A declared length past the limit is refused at once (the server does not wait for it);
    one sent without a length is refused once it grows past the limit."""
    for route in ("/api/sessions/msess_nope/resume", "/api/instances/docker_0123456789ab/file?path=x"):
        method = "PUT" if "file" in route else "POST"
        with _connect(board) as sock:
            head = f"{method} {route} HTTP/1.1\r\n{_signed_in(board)}Content-Length: {1 << 40}\r\n\r\n"
            sock.sendall(head.encode() + b"{")
            answer = _answer(sock)
        assert answer.startswith("HTTP/1.1 413") and "over" in answer, answer

    def chunks() -> Iterator[bytes]:
        for _ in range(JSON_MAX_BYTES // 65536 + 2):
            yield b" " * 65536

    url = f"http://127.0.0.1:{board.port}/api/sessions/msess_nope/resume"
    cookies = {f"praisonai_dashboard_{board.port}": board.access.cookie_value}
    headers = {"x-praisonai-token": board.access.header_token}
    answer = httpx.post(url, content=chunks(), cookies=cookies, headers=headers, timeout=30)
    assert answer.status_code == 413 and "over 4 MiB" in answer.text
