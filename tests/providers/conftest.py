"""A provider's test module names its provider (``PROVIDER = "e2b"``) and gets, for the whole
module, the provider served as every test serves it (tests/served.py): ``served``, its ``fake``,
the ``provider`` and ``ctx``, one instance for the conformance-style tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from served import TARGETS, Served, context

from praisonai.compute.base import ComputeProvider
from praisonai.compute.testing import Context


@pytest.fixture(scope="module")
def served(request: pytest.FixtureRequest) -> Iterator[Served]:
    with TARGETS[request.module.PROVIDER].serve(request) as target:
        yield target


@pytest.fixture(scope="module")
def fake(served: Served) -> Any:
    return served.fake


@pytest.fixture(scope="module")
def provider(served: Served) -> ComputeProvider:
    return served.provider


@pytest.fixture(scope="module")
def ctx(served: Served) -> Iterator[Context]:
    with context(served) as made:
        yield made
