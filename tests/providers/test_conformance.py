"""The packaged conformance suite on every registered provider, each served as the tests serve it
(tests/served.py): the real service on this machine, or the vendor's real SDK against its wire fake."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from served import TARGETS, Target, context, registered, run_check

from praisonai.compute.testing import CHECKS, Context


@pytest.fixture(scope="module", params=list(TARGETS))
def target(request: pytest.FixtureRequest) -> Iterator[tuple[Target, Context]]:
    served = TARGETS[request.param]
    with served.serve(request) as made, context(made) as ctx:
        yield served, ctx


@pytest.mark.parametrize("check", list(CHECKS))
def test_conformance(target: tuple[Target, Context], check: str, request: pytest.FixtureRequest) -> None:
    served, ctx = target
    if served.sdk_garbage:
        request.getfixturevalue("collect_sdk_garbage")
    run_check(served, ctx, check)


def test_every_registered_provider_is_served() -> None:
    """A provider registered by entry point with no way to serve it in the tests (its service or
    its wire fake, in tests/served.py) would go untested."""
    assert [name for name in registered() if name not in TARGETS] == []
