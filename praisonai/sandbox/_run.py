"""One command in a fresh instance, removed afterwards: :meth:`AsyncSandbox.run` and its twin.

Where the provider has a one-shot path and the config needs no step before the command, the
instance is started with the command as its own work and removed when it ends (``docker run
--rm``: no idle instance, helper or forced removal to wait for); otherwise it is provisioned,
the command executed, and the instance shut down, also when the call fails or is cancelled.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Sequence
from typing import TYPE_CHECKING

import anyio

from praisonai._errors import CommandFailedError, CommandTimeoutError
from praisonai._output import OutputBuffer
from praisonai._types import ExecRequest, ExecResult, OutputSink, Unset

if TYPE_CHECKING:
    from praisonai.compute.base import ComputeProvider
    from praisonai.compute.config import ComputeConfig
    from praisonai.sandbox.provisioning import ProvisionPlan


async def run_in_fresh(
    chosen: ProvisionPlan,
    command: str | Sequence[str],
    *,
    timeout: float | Unset | None,
    max_output: int | None,
    on_output: OutputSink | None,
    stdin: bytes | str | AsyncIterable[bytes] | None,
    check: bool,
) -> ExecResult:
    """Run ``command`` once in a fresh instance of ``chosen`` and remove it; the result keeps the
    output as :meth:`AsyncSandbox.exec` does (bounded by ``max_output``), ``check`` likewise."""
    from praisonai.compute.requests import exec_request

    request = exec_request(command, timeout, max_output=max_output, on_output=on_output, stdin=stdin)
    if chosen.provider.runs_once(chosen.config):
        result = await _one_shot(chosen.provider, chosen.config, request.command, request)
    else:
        result = await _provisioned(chosen, request.command, request)
    if check and result.timed_out:
        raise CommandTimeoutError(result, str(command))
    if check and result.exit_code != 0:
        raise CommandFailedError(result, str(command))
    return result


async def _one_shot(
    provider: ComputeProvider, config: ComputeConfig, line: str, request: ExecRequest
) -> ExecResult:
    """The provider's one-shot path; its output is not kept by the provider, so it is kept here."""
    out, err = OutputBuffer(request.max_output), OutputBuffer(request.max_output)
    forward = request.on_output

    def keep(name: str, data: bytes) -> None:
        (out if name == "stdout" else err).write(data)
        if forward is not None:
            forward("stdout" if name == "stdout" else "stderr", data)

    result = await provider.run_once(
        config, line, timeout=request.timeout, on_output=keep, stdin=request.stdin
    )
    return result.replace(stdout=out.text(), stderr=err.text(), truncated=out.truncated or err.truncated)


async def _provisioned(chosen: ProvisionPlan, line: str, request: ExecRequest) -> ExecResult:
    """Provision, execute, shut down: the instance never outlives the command."""
    provider = chosen.provider
    info = await provider.provision(chosen.config)
    try:
        return await provider.execute(
            info.instance_id,
            line,
            request.timeout,
            max_output=request.max_output,
            on_output=request.on_output,
            stdin=request.stdin,
        )
    finally:
        with anyio.CancelScope(shield=True):
            await provider.shutdown(info.instance_id)
