"""The wire's parsers hold a bounded amount whatever arrives (issue 42, item 3).

A command can write to the helper's stderr, and, running as its user, to its stdout: an endless
line there once grew the host process by the whole line, re-joined on every chunk (quadratic:
300 MB never finished). Measured here by what each parser holds after every chunk, not by time.
"""

from __future__ import annotations

from praisonai.runtime._wire import MAX_LINE, MAX_STATUS, LineSplitter, PendingReply, ReplyParser

_CHUNK = b"a" * (64 << 10)


def test_an_endless_line_is_dropped_as_it_arrives_and_the_next_line_is_whole() -> None:
    lines: list[str] = []
    splitter = LineSplitter(lines.append)
    most = 0
    for _ in range((300 << 20) // len(_CHUNK)):  # 300 MiB without a newline
        splitter.feed(_CHUNK)
        most = max(most, splitter.buffered)
    splitter.feed(b"aaa\nD job 0 0 secret\n")
    assert most <= MAX_LINE
    assert lines == ["D job 0 0 secret"]
    assert splitter.buffered == 0


def test_lines_up_to_the_limit_arrive_whole_however_they_are_cut() -> None:
    lines: list[str] = []
    splitter = LineSplitter(lines.append, max_line=10)
    for piece in (b"fir", b"st\nsec", b"ond\n", b"0123456789", b"\n", b"0123456789x", b"y\nlast", b"\n"):
        splitter.feed(piece)
        assert splitter.buffered <= 10
    assert lines == ["first", "second", "0123456789", "last"]  # the 12-byte line is dropped


def test_a_line_over_the_limit_split_across_chunks_is_dropped_to_its_newline() -> None:
    lines: list[str] = []
    splitter = LineSplitter(lines.append, max_line=4)
    splitter.feed(b"abc")  # held: it may still end in time
    splitter.feed(b"de")  # now too long: dropped, and so is the rest of it
    splitter.feed(b"fgh")
    assert splitter.buffered == 0
    splitter.feed(b"ij\nok\n")
    assert lines == ["ok"]


def test_a_status_that_never_ends_ends_its_reply_and_the_next_reply_parses() -> None:
    """A reply's nonce followed by endless bytes (only a forger that read the nonce could write
    it): the parser holds at most a nonce and a status, the reply ends with a status nobody
    accepts, and what follows the forged line's newline belongs to the next reply."""
    got: list[tuple[str | BaseException, bytes]] = []
    parser = ReplyParser()
    first, second = (
        PendingReply(b"@pzfirst", lambda s, b: got.append((s, b))),
        PendingReply(b"@pzsecond", lambda s, b: got.append((s, b))),
    )
    parser.expect(first)
    parser.expect(second)
    parser.feed(b"body@pzfirst ")
    most = 0
    for _ in range(1000):
        parser.feed(_CHUNK)
        most = max(most, parser.buffered)
    assert most <= len(b"@pzfirst") + MAX_STATUS
    parser.feed(b"aaa\nsecond body@pzsecond 0\n")
    assert len(got) == 2
    (status, body), (status2, body2) = got
    assert body == b"body" and status != "0" and len(str(status)) <= MAX_STATUS
    assert (status2, body2) == ("0", b"second body")
    assert parser.buffered == 0
