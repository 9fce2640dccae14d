"""The conformance suite every provider must pass, shipped in the package.

Each check is an ``async def check(ctx)`` that raises ``AssertionError`` on a broken contract.
Run them all with :func:`run_checks`, or one by one from pytest::

    @pytest.mark.parametrize("name", CHECKS)
    def test_conformance(name, ctx):
        if reason := skip_reason(name, ctx.provider):
            pytest.skip(reason)
        anyio.run(CHECKS[name], ctx)

A check that needs an instance of its own (shutdown, cross-process) provisions and removes it;
the others share ``ctx.instance_id`` and leave it as they found it, apart from files they write.
A check that needs a capability the provider does not declare (background processes, sessions)
or drives the helper channel of a provider without one does not apply to it: :func:`skip_reason`
says why. The suites are listed here, explicitly, in ``SUITES``: :mod:`.contract` (exec, files,
lifecycle), :mod:`.exec` (streams, bounds, at-most-once, processes, sessions), then one module per
workbench ability (:mod:`.files`, :mod:`.pause`, :mod:`.workspace`, :mod:`.ports`, :mod:`.pty`,
:mod:`.snapshots`, :mod:`.egress`). :mod:`.fake` is a provider written against the contract
alone; :mod:`.sshd` a throwaway sshd for the SSH provider's tests.
"""

from __future__ import annotations

from collections.abc import Mapping

from praisonai.compute.base import ComputeProvider
from praisonai.compute.channel import ChannelMixin
from praisonai.compute.testing import contract, egress, ports
from praisonai.compute.testing import exec as exec_checks
from praisonai.compute.testing import files as file_checks
from praisonai.compute.testing import pause as pause_checks
from praisonai.compute.testing import pty as pty_checks
from praisonai.compute.testing import snapshots as snapshot_checks
from praisonai.compute.testing import workspace as workspace_checks
from praisonai.compute.testing._kit import Check, Context, Suite

SUITES: tuple[Suite, ...] = (
    contract.suite,
    exec_checks.suite,
    file_checks.suite,
    pause_checks.suite,
    workspace_checks.suite,
    ports.suite,
    pty_checks.suite,
    snapshot_checks.suite,
    egress.suite,
)
#: Every check by name, in suite order.
CHECKS: dict[str, Check] = {name: check for suite in SUITES for name, check in suite.checks.items()}

__all__ = ["CHECKS", "SUITES", "Check", "Context", "Suite", "run_checks", "skip_reason"]


def skip_reason(name: str, provider: ComputeProvider) -> str | None:
    """Why check ``name`` does not apply to ``provider`` (one sentence), or ``None`` when it does."""
    suite = next(s for s in SUITES if name in s.checks)
    missing = sorted(c.value for c in suite.needs[name] - provider.capabilities)
    if missing:
        return f"the {provider.name} provider does not declare {', '.join(missing)}"
    if name in suite.channel and not isinstance(provider, ChannelMixin):
        return f"the {provider.name} provider has no helper channel to kill (its exec is native)"
    return None


async def run_checks(ctx: Context, known_failures: Mapping[str, str] | None = None) -> dict[str, str]:
    """Run every check that applies to ``ctx.provider``; return ``{name: failure}`` for those
    that failed unexpectedly (``known_failures`` lists a provider's gaps, each with its reason)."""
    failures = {}
    for name, check in CHECKS.items():
        if (known_failures and name in known_failures) or skip_reason(name, ctx.provider):
            continue
        try:
            await check(ctx)
        except AssertionError as exc:
            failures[name] = str(exc) or "assertion failed"
    return failures
