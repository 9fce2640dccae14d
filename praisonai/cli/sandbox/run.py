"""``praisonai sandbox run``: one command in a fresh instance, which is always removed after.

The instance follows ``.praisonai/environment.yaml`` (found from the working directory) like every
other provisioning path; ``--image`` and ``--env`` are explicit and win over it.

Ctrl-C, SIGTERM and SIGHUP all end the run the same way: the command is cancelled, the instance
removed, and the exit status is 128 + the signal's number (130, 143, 129), as a shell reports it.
"""

from __future__ import annotations

import shlex
from collections.abc import AsyncIterable, Callable
from typing import TYPE_CHECKING

import anyio
import typer

from praisonai._limits import DEFAULT_EXEC_TIMEOUT_S, check_timeout
from praisonai.cli import _output
from praisonai.cli._options import AllowHostMountsOpt, EnvironmentOpt
from praisonai.cli.sandbox._plan import planned
from praisonai.cli.sandbox._running import (
    CommandArg,
    ComputeOpt,
    EnvOpt,
    ImageOpt,
    InteractiveOpt,
    Interrupted,
    NoEnvironmentOpt,
    TimeoutOpt,
    ended,
    piped_stdin,
    signals_interrupt,
    wait,
    write,
)

if TYPE_CHECKING:
    from praisonai._types import ExecResult
    from praisonai.sandbox.provisioning import ProvisionPlan


def run(
    command: CommandArg,
    compute: ComputeOpt = None,
    image: ImageOpt = None,
    timeout: TimeoutOpt = DEFAULT_EXEC_TIMEOUT_S,
    env: EnvOpt = None,
    environment: EnvironmentOpt = None,
    no_environment: NoEnvironmentOpt = False,
    allow_host_mounts: AllowHostMountsOpt = False,
    interactive: InteractiveOpt = False,
) -> None:
    """Run COMMAND in a new instance, stream its output, and exit with its exit code; the instance
    is removed afterwards, also on Ctrl-C, SIGTERM or SIGHUP.

    COMMAND is a program and its arguments, passed as they are, not a shell line: for pipes,
    redirections or several commands, run a shell yourself, as in sandbox run -- sh -c 'a | b'.

    The command's standard input is empty unless -i is given: then what is piped or redirected
    into praisonai streams to the command as it comes (a terminal's input does not).

    Examples:

    \b
      praisonai sandbox run -- python3 -c 'print(2+2)'
      praisonai sandbox run -c local -e MODE=ci -- sh -c 'echo "$MODE" | wc -c'
      git diff | praisonai sandbox run -i -- wc -l
    """
    seconds = check_timeout(timeout, "--timeout", none="0") or None  # 0 means no limit here
    from praisonai.compute.requests import check_command_text

    check_command_text(command)  # before an instance is made for a command that cannot run
    chosen = planned(compute, image, env, environment, no_environment, allow_host_mounts)
    stdin = piped_stdin() if interactive else None
    line = shlex.join(command)
    with (
        signals_interrupt() as interrupted,
        _output.progress(f"starting a {chosen.provider.provider_name} instance") as ready,
    ):
        try:
            result = wait(lambda: _create_and_run(chosen, line, seconds, stdin, ready))
        except Interrupted:
            ready()
            _output.note(f"interrupted by {interrupted.name}: the instance was removed")
            raise typer.Exit(128 + interrupted.number) from None
    raise typer.Exit(ended(result, command, seconds))


async def _create_and_run(
    chosen: ProvisionPlan,
    command: str,
    timeout: float | None,
    stdin: AsyncIterable[bytes] | None,
    ready: Callable[[], None],
) -> ExecResult:
    """Provision, run, remove: one task, so that cancelling it at any point removes the instance
    (a cancelled provision removes what it made; ``finally`` removes the rest).

    Where the provider can, and the config needs no steps before the command, the instance is
    started with the command as its own work and removed when it ends (``docker run --rm``):
    no idle instance, exec helper or removal of a running instance to wait for. A warm instance
    of the same definition (``praisonai compute warm``) is faster still: it is claimed first."""
    from praisonai.compute import warm
    from praisonai.sandbox import AsyncSandbox

    provider, config = chosen.provider, chosen.config
    claimed = await warm.claim(provider, config)  # a warm pool of this definition goes first
    if claimed is None and provider.runs_once(config):
        return await provider.run_once(
            config, command, timeout=timeout, on_output=write, stdin=stdin, on_start=ready
        )
    info = claimed or await provider.provision(config)  # the file was read once, by plan()
    sandbox = AsyncSandbox(provider, info, owned=True, plan=chosen)
    try:
        ready()
        return await sandbox.exec(command, timeout=timeout, on_output=write, stdin=stdin)
    finally:
        with anyio.CancelScope(shield=True):
            await sandbox.close()  # the instance never outlives the command
