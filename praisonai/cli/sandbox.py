"""``praisonai sandbox run``: one command in a fresh instance, which is always removed after."""

from __future__ import annotations

import shlex
import sys
from typing import Annotated, Literal

import typer

from praisonai._errors import ConfigError
from praisonai.cli import _output
from praisonai.compute.registry import resolve_compute
from praisonai.sandbox import Sandbox

app = typer.Typer(help="Run commands in sandboxes.", no_args_is_help=True)


@app.command("run")
def run(
    command: Annotated[list[str], typer.Argument(help="The command, after --.", show_default=False)],
    compute: Annotated[
        str | None, typer.Option("--compute", "-c", help="Provider name (default: docker when available, else local).")
    ] = None,
    image: Annotated[str | None, typer.Option("--image", help="Image to run (docker).")] = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds before the command is killed; 0 for none.")] = 300,
    env: Annotated[list[str] | None, typer.Option("--env", "-e", help="K=V, repeatable.")] = None,
) -> None:
    """Run COMMAND in a new instance, stream its output, exit with its exit code."""
    fields: dict[str, object] = {"env": _parse_env(env or [])}
    if image:
        fields["image"] = image
    provider = resolve_compute(compute)
    if compute is None:
        _output.note(f"compute: {provider.provider_name}")
    sandbox = Sandbox.create(provider, **fields)
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
