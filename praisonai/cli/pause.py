"""``praisonai compute pause|resume ID…``: stop instances keeping their files, and bring them back
under the same ids (providers with ``Capability.PAUSE``). Each found as ``compute stop`` finds it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import typer

from praisonai import _portal
from praisonai._errors import ProviderUnavailableError
from praisonai._types import InstanceInfo
from praisonai.cli import _output
from praisonai.cli._options import InstanceIdsArg, JsonOpt
from praisonai.compute import inventory
from praisonai.compute.base import ComputeProvider


def pause(instance_ids: InstanceIdsArg = None, json: JsonOpt = False) -> None:
    """Pause instances: their processes end, their files stay; resume brings them back.

    Exits 1 when an instance is unknown or could not be paused (its provider cannot, say).
    """
    _each(instance_ids or [], "pause", lambda provider: provider.pause, json)


def resume(instance_ids: InstanceIdsArg = None, json: JsonOpt = False) -> None:
    """Resume paused instances under the same ids, their files as they were paused.

    Exits 1 when an instance is unknown or could not be resumed.
    """
    _each(instance_ids or [], "resume", lambda provider: provider.resume, json)


def _each(
    instance_ids: list[str],
    verb: str,
    act: Callable[[ComputeProvider], Callable[[str], Awaitable[InstanceInfo]]],
    as_json: bool,
) -> None:
    """Act on each instance; print each one's new status (or, with ``as_json``, the shape
    ``compute stop --json`` prints: done, failed, unknown, problems)."""
    if not instance_ids:
        raise typer.BadParameter(f"name the instances to {verb}", param_hint="INSTANCE_ID")
    try:
        found, unknown, problems = inventory.locate(instance_ids)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="INSTANCE_ID") from None
    for line in problems:
        _output.error(line)
    for instance_id in unknown:
        _output.error(f"no instance {instance_id!r} in the ledger or in any provider's list")
    done: list[dict[str, str]] = []
    failed: list[dict[str, str]] = []
    for target in found:
        try:
            if target.provider is None:
                raise ProviderUnavailableError(target.reason)
            info = _portal.call(act(target.provider), target.instance_id)
        except Exception as exc:  # one sentence per instance; the others still go
            _output.error(f"could not {verb} {target.instance_id}: {exc}")
            failed.append({"instance": target.instance_id, "error": str(exc)})
            continue
        done.append({"instance": target.instance_id, "status": info.status.value})
        if not as_json:
            typer.echo(_output.safe(f"{target.instance_id}: {info.status.value}"))
    if as_json:
        outcome = {"done": done, "failed": failed, "unknown": list(unknown), "problems": list(problems)}
        _output.print_json(outcome)
    if failed or unknown:
        raise typer.Exit(1)
