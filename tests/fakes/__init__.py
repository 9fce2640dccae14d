"""Loopback fakes of the vendors' wires, for the tests and the benchmarks (not shipped in the wheel).

Each cloud SDK (and the anthropic client, for Claude Managed Agents) talks to its fake over the
vendor's real protocol, so the SDK's own request building, retries and error mapping run; the
sandboxes behind the fakes are local docker containers, driven through :mod:`fakes.docker`.

One package per provider, named after it: :mod:`fakes.e2b`, :mod:`fakes.modal`,
:mod:`fakes.daytona`, :mod:`fakes.flyio`, :mod:`fakes.tenki`, :mod:`fakes.kubernetes`, and
:mod:`fakes.managed_agents` for the hosted agent backend. The tests import them as ``fakes``
(pytest puts ``tests/`` on ``sys.path``); the benchmarks through ``benchmarks/_common.py``.
"""
