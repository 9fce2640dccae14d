"""What an error tells a caller about repeating the call."""

from __future__ import annotations

from praisonai import ChannelClosedError


def test_a_channel_closed_before_sending_may_be_repeated() -> None:
    assert ChannelClosedError("closed", sent=False).retryable is True


def test_a_channel_closed_after_sending_may_have_run_the_command() -> None:
    """Repeating it could run the command twice: not retryable."""
    assert ChannelClosedError("closed", sent=True).retryable is False
    assert ChannelClosedError("closed").retryable is False
