"""A background process's output is readable the moment ``start()`` returns (empty until it
prints), on every provider that runs them through the exec channel — not "no such file" or
"permission denied" while its job is still being set up (the README's ``proc.logs(offset=0)``
right after ``sb.start(...)``)."""

from __future__ import annotations

import pytest

from praisonai import Sandbox

STARTS = 20  # the race lost most of the time on local; 20 tries all but guarantee to see it


@pytest.mark.parametrize("compute", ["local", "docker"])
def test_logs_right_after_start_read_empty_output_not_an_error(
    compute: str, request: pytest.FixtureRequest
) -> None:
    if compute == "docker":
        request.getfixturevalue("docker_ok")
    with Sandbox.create(compute, environment=False) as sb:
        for _ in range(STARTS):
            proc = sb.start("sleep 0.2; echo late")
            try:
                assert proc.logs(offset=0) == b""
                assert proc.logs("stderr", offset=0) == b""
            finally:
                proc.kill()
