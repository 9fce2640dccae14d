"""``praisonai sandbox run``: one command in a fresh instance, which is always removed after.

The instance follows ``.praisonai/environment.yaml`` (found from the working directory) like every
other provisioning path; ``--image`` and ``--env`` are explicit and win over it."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated, Literal

import typer

from praisonai._errors import ConfigError
from praisonai.cli import _output
from praisonai.compute.registry import resolve_compute
from praisonai.sandbox import Sandbox
from praisonai.sandbox.environment import effective_config, shown_path

app = typer.Typer(help="Run commands in sandboxes.", no_args_is_help=True)


@app.command("run")
def run(
    command: Annotated[list[str], typer.Argument(help="The command, after --.", show_default=False)],
    compute: Annotated[
        str | None,
        typer.Option(
            "--compute",
            "-c",
            help="Provider (default: the environment file's backend, else docker if available, else local).",
        ),
    ] = None,
    image: Annotated[str | None, typer.Option("--image", help="Image to run (docker).")] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds before the command is killed; 0 for none.")
    ] = 300,
    env: Annotated[list[str] | None, typer.Option("--env", "-e", help="K=V, repeatable.")] = None,
    environment: Annotated[
        Path | None,
        typer.Option(
            "--environment",
            help="Environment file (default: .praisonai/environment.yaml, up to the repo root).",
        ),
    ] = None,
    no_environment: Annotated[
        bool, typer.Option("--no-environment", help="Read no environment file.")
    ] = False,
) -> None:
    """Run COMMAND in a new instance, stream its output, exit with its exit code."""
    if environment is not None and no_environment:
        raise ConfigError("--environment and --no-environment exclude each other")
    fields: dict[str, object] = {"env": _parse_env(env or [])}
    if image:
        fields["image"] = image
    effective = effective_config(fields, path=environment, use_file=not no_environment)
    provider = resolve_compute(compute if compute is not None else effective.backend)
    if effective.source is not None:
        shown, definition = shown_path(effective.source), effective.config.definition_hash()
        _output.note(f"environment: {shown} (definition {definition})")
    if compute is None:
        by = " (backend from the environment file)" if effective.backend else ""
        _output.note(f"compute: {provider.provider_name}{by}")
    # The file was read once, here: the sandbox gets the merged config and reads no file again.
    sandbox = Sandbox.create(provider, effective.config, environment=False)
    try:
        result = sandbox.exec(shlex.join(command), timeout=timeout or None, on_output=_write)
    finally:
        sandbox.close()  # also on Ctrl-C: the instance never outlives the command
    if result.timed_out:
        _output.error(f"command timed out after {timeout:g}s and was killed")
    raise typer.Exit(result.exit_code)


def _write(stream: Literal["stdout", "stderr"], chunk: bytes) -> None:
    target = sys.stdout.buffer if stream == "stdout" else sys.stderr.buffer
    target.write(chunk)
    target.flush()


def _parse_env(pairs: list[str]) -> dict[str, str]:
    env = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise ConfigError(f"--env takes KEY=VALUE, not {pair!r}")
        env[key] = value
    return env
