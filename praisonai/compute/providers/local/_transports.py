"""The processes a local instance's channel talks to over pipes: the exec helper, which frames
background processes' results, and each session's shell.

The helper runs on the host, also for an isolated instance: outside every sandbox, where no
command can see, signal, trace or write into it. It starts each background process through the
instance's sandbox launcher (``_launch.sandbox_launcher``), in a pid namespace of its own; its
spool is in no sandbox. A session's shell gets a sandbox of its own.
"""

from __future__ import annotations

from praisonai.compute.providers.local._bwrap import SandboxedProcessTransport
from praisonai.compute.providers.local._launch import (
    SANDBOX_VARIABLE,
    base_env,
    isolated_argv,
    sandbox_launcher,
)
from praisonai.compute.providers.local._record import Instance
from praisonai.runtime.transport import ProcessTransport


def helper_transport(inst: Instance, argv: list[str]) -> ProcessTransport:
    """The exec helper ``argv`` on the host; its background processes outlive this process.
    ``FileNotFoundError`` when the instance's directory is gone."""
    env = base_env(inst)
    if inst.isolate:
        env[SANDBOX_VARIABLE] = str(sandbox_launcher(inst))
    return _recorded(inst, ProcessTransport(argv, env=env, cwd=str(inst.workspace)))


def session_transport(inst: Instance, argv: list[str]) -> ProcessTransport:
    """A session's shell ``argv``, in a sandbox of its own when ``inst`` isolates (no
    --new-session: the transport is a session already, with no tty); it dies with this process."""
    kind = ProcessTransport
    if inst.isolate:
        argv = [*isolated_argv(inst, inst.working_dir, new_session=False), *argv]
        kind = SandboxedProcessTransport
    return _recorded(inst, kind(argv, env=base_env(inst), cwd=str(inst.workspace), die_with_owner=True))


def _recorded(inst: Instance, transport: ProcessTransport) -> ProcessTransport:
    (inst.root / "pgids" / str(transport.process.pid)).touch()  # shutdown kills its group
    return transport
