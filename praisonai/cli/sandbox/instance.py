"""``praisonai sandbox create | exec | cp``: docker's commands for an instance that outlives the
command line, so a person can work, by id, with an instance they made or one an agent left.

``create`` makes an instance (as ``sandbox run`` would, environment file included; with
``--from-snapshot``, from a snapshot's files) and prints its id; it stays until ``sandbox rm``, its
idle timeout or its ttl. ``exec`` runs a command in any
instance and exits with its status; ``cp`` copies files and trees in or out. Each finds the
instance in the ledger or in its provider's own list; a paused one is resumed.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Awaitable, Callable
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Annotated

import typer

from praisonai._errors import ConfigError
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
    parse_env,
    piped_stdin,
    signals_interrupt,
    wait,
    write,
)
from praisonai.compute.inventory import provider_of

if TYPE_CHECKING:
    from praisonai.compute.base import ComputeProvider
    from praisonai.sandbox import AsyncSandbox
    from praisonai.sandbox.provisioning import ProvisionPlan

InstanceArg = Annotated[
    str, typer.Argument(metavar="INSTANCE_ID", help="The instance (see `compute ps`).", show_default=False)
]
#: ``INSTANCE_ID:PATH``, the instance side of ``cp`` (as docker's ``CONTAINER:PATH``).
_REMOTE = re.compile(r"(?P<id>[a-z0-9]+_[0-9a-f]{12}):(?P<path>.+)", re.DOTALL)


def create(
    compute: ComputeOpt = None,
    image: ImageOpt = None,
    env: EnvOpt = None,
    environment: EnvironmentOpt = None,
    no_environment: NoEnvironmentOpt = False,
    allow_host_mounts: AllowHostMountsOpt = False,
    from_snapshot: Annotated[
        str | None,
        typer.Option(
            "--from-snapshot",
            metavar="SNAPSHOT",
            help="Start from a snapshot's files (its id or name: `compute snapshots`), on its provider.",
        ),
    ] = None,
) -> None:
    """Create an instance and print its id; it stays until `sandbox rm`, or until its idle timeout
    or ttl (the environment file's idle_timeout, ttl and idle_action) ends or pauses it. With
    --from-snapshot its files are the snapshot's and only the environment file's refresh steps
    run; its env, limits and network come from this command, never from the snapshot.

    Examples:

    \b
      id=$(praisonai sandbox create -c docker)
      praisonai sandbox exec "$id" -- python3 -c 'print(2+2)'
      praisonai sandbox rm "$id"
    """
    if from_snapshot is not None:
        args = (compute, image, env, environment, no_environment, allow_host_mounts)
        typer.echo(_output.safe(_create_from(from_snapshot, *args)))
        return
    chosen = planned(compute, image, env, environment, no_environment, allow_host_mounts)
    with _output.progress(f"starting a {chosen.provider.provider_name} instance"):
        made = wait(lambda: _create(chosen))
    typer.echo(made)


def _create_from(
    snapshot: str,
    compute: str | None,
    image: str | None,
    env: list[str] | None,
    environment: Path | None,
    no_environment: bool,
    allow_host_mounts: bool,
) -> str:
    """``sandbox create --from-snapshot``: a new instance whose files are the snapshot's, of the
    snapshot's provider (``--compute`` must name that kind), its config from the options and the
    environment file; returns its id.

    Raises:
        ConfigError: no such snapshot, another provider's, or ``--image`` given too.
    """
    from praisonai.compute import snapshots

    if image:
        raise ConfigError("--image and --from-snapshot exclude each other: the snapshot holds the files")
    found = snapshots.find(snapshot, op="provision")
    provider: str | ComputeProvider = compute if compute is not None else snapshots.provider_of(found)
    chosen = planned(provider, None, env, environment, no_environment, allow_host_mounts)
    snapshots.find(found, chosen.provider.name, op="provision")  # another provider's: refused
    with _output.progress(f"starting a {chosen.provider.provider_name} instance from {found.id}"):
        info = wait(lambda: snapshots.provision_from(chosen.provider, chosen.config, found))
    return info.instance_id


async def _create(chosen: ProvisionPlan) -> str:
    """A new instance that outlives this process (its handle lets go, the idle policy ends it)."""
    from praisonai.sandbox import AsyncSandbox

    sandbox = await AsyncSandbox.from_plan(chosen)
    sandbox.owned = False
    await sandbox.close()
    return sandbox.id


def exec_(
    instance_id: InstanceArg,
    command: CommandArg,
    timeout: TimeoutOpt = DEFAULT_EXEC_TIMEOUT_S,
    env: EnvOpt = None,
    workdir: Annotated[
        str | None,
        typer.Option("--workdir", "-w", metavar="DIR", help="Working directory in the instance."),
    ] = None,
    interactive: InteractiveOpt = False,
) -> None:
    """Run COMMAND in a running instance, stream its output, and exit with its exit code (125 when
    praisonai failed). Ctrl-C, SIGTERM or SIGHUP kill the command, not the instance.

    COMMAND is a program and its arguments, not a shell line: run -- sh -c 'a | b' for pipes.
    The command's standard input is empty unless -i is given (then a pipe streams to it as it comes).
    """
    seconds = check_timeout(timeout, "--timeout", none="0") or None  # 0 means no limit here
    from praisonai.compute.requests import check_command_text

    check_command_text(command)
    variables = parse_env(env or [])
    stdin = piped_stdin() if interactive else None
    sandbox = attached(instance_id, "run a command in", "exec")
    line = shlex.join(command)
    with signals_interrupt() as interrupted:
        try:
            result = wait(
                lambda: sandbox.exec(
                    line, timeout=seconds, cwd=workdir, env=variables, on_output=write, stdin=stdin
                )
            )
        except Interrupted:
            _output.note(f"interrupted by {interrupted.name}: the command was killed")
            raise typer.Exit(128 + interrupted.number) from None
    raise typer.Exit(ended(result, command, seconds))


def cp(
    source: Annotated[str, typer.Argument(metavar="SRC", help="A local path, or INSTANCE_ID:PATH.")],
    destination: Annotated[str, typer.Argument(metavar="DEST", help="INSTANCE_ID:PATH, or a local path.")],
) -> None:
    """Copy a file or a directory tree between this host and an instance: one side is
    INSTANCE_ID:PATH, the other a local path. DEST is the path SRC becomes, but a local DEST that
    is a directory receives SRC under its own name. Links in the instance are copied as links,
    never followed out of it.

    Examples:

    \b
      praisonai sandbox cp ./src docker_0123456789ab:/workspace/src
      praisonai sandbox cp docker_0123456789ab:/workspace/report.md .
    """
    into, out_of = _REMOTE.fullmatch(destination), _REMOTE.fullmatch(source)
    if (into is None) == (out_of is None):
        raise ConfigError(
            f"cp copies between this host and an instance: give INSTANCE_ID:PATH as exactly one of "
            f"{source!r} and {destination!r}"
        )
    remote = into or out_of
    assert remote is not None
    sandbox = attached(remote["id"], "copy files of", "cp")
    with _output.transfer(f"copying {source} to {destination}") as on_bytes:
        if into is not None:
            wait(lambda: _counted(sandbox.upload(source, remote["path"]), on_bytes))
            return
        local = Path(destination)
        if local.is_dir():  # this host's directory, as docker cp takes it
            local = local / PurePosixPath(remote["path"]).name
        wait(lambda: _counted(sandbox.download(remote["path"], local), on_bytes))


async def _counted(transfer: Awaitable[None], on_bytes: Callable[[int], None]) -> None:
    """``transfer``, with ``on_bytes`` hearing each step of it (set on the loop that runs it)."""
    from praisonai import _transfer

    with _transfer.watching(on_bytes):
        await transfer


def attached(instance_id: str, doing: str, op: str) -> AsyncSandbox:
    """A handle on the instance (for ``exec``, ``cp`` and the snapshot commands) that leaves it
    running when let go; a paused one is resumed."""
    from praisonai.sandbox import AsyncSandbox

    provider = provider_of(instance_id, doing, op)
    return wait(lambda: AsyncSandbox.connect(instance_id, provider))
