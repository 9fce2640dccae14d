from praisonai._output import OutputBuffer


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
