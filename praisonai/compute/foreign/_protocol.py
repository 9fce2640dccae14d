"""PraisonAI's ``ComputeProviderProtocol`` as data: what a provider object must have, the config
object it is given, and its results read back as ours.

The protocol is duck-typed: async ``provision(config)`` returning an object with ``instance_id``,
async ``execute(instance_id, command, timeout=None)`` returning a dict with ``stdout``,
``stderr`` and ``exit_code``, async ``shutdown(instance_id)``; optionally ``upload_file``,
``download_file``, ``get_status`` and ``list_instances``.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from praisonai._limits import DEFAULT_IDLE_TIMEOUT_S, MAX_NAME_BYTES
from praisonai._output import OutputBuffer, exec_result
from praisonai._types import TIMEOUT_EXIT_CODE, ExecRequest, ExecResult, InstanceStatus
from praisonai.compute.config import ComputeConfig, NetworkAllow

#: The methods every provider object must have, all async.
REQUIRED = ("provision", "execute", "shutdown")
#: What the protocol asks for, as a refusal says it.
SHAPE = (
    "PraisonAI's ComputeProviderProtocol needs async provision(config), "
    "async execute(instance_id, command, timeout=None) and async shutdown(instance_id)"
)


def protocol_problem(obj: object) -> str | None:
    """One sentence naming what ``obj`` lacks of the protocol, or ``None`` when it has it all.

    A method counts when it is an ``async def`` (a plain method returning a coroutine cannot be
    told from a blocking one before it is called, and a blocking one would stall every agent).
    """
    missing = [name for name in REQUIRED if not callable(getattr(obj, name, None))]
    plain = [name for name in REQUIRED if name not in missing and not _is_async(getattr(obj, name))]
    if not missing and not plain:
        return None
    faults = []
    if missing:
        faults.append(f"has no {' or '.join(missing)}")
    if plain:
        faults.append(f"has a plain (not async) {' and '.join(plain)}")
    return f"the compute object {type(obj).__name__} {' and '.join(faults)}: {SHAPE}"


def looks_like_provider(obj: object) -> bool:
    """Whether ``obj`` was meant as a provider: it has one of the protocol's methods."""
    return any(callable(getattr(obj, name, None)) for name in REQUIRED)


def _is_async(method: Any) -> bool:
    return inspect.iscoroutinefunction(method)


@dataclass
class ForeignConfig:
    """The config object a PraisonAI provider's ``provision`` is given: PraisonAI's
    ``ComputeConfig`` fields, names and defaults (where ours leaves a field to the provider,
    PraisonAI's default is given, since its providers read every field). Honouring them is the
    object's work, as in PraisonAI: image, resources, packages, setup, ``env`` (not repeated on
    each command line, where values that may be secrets would show), network and mounts."""

    image: str = "python:3.12-slim"
    cpu: float = 1
    memory_mb: int = 1024
    gpu: str | int | None = None
    packages: dict[str, list[str]] = field(default_factory=dict)
    setup: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    working_dir: str = "/workspace"
    mount_paths: list[str] = field(default_factory=list)
    networking: dict[str, Any] = field(default_factory=lambda: {"type": "unrestricted"})
    auto_shutdown: bool = True
    idle_timeout_s: int = DEFAULT_IDLE_TIMEOUT_S
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, cfg: ComputeConfig) -> ForeignConfig:
        """``cfg`` in PraisonAI's spelling (``network`` becomes its ``networking`` dict)."""
        default = cls()
        return cls(
            image=default.image if cfg.image is None else cfg.image,
            cpu=default.cpu if cfg.cpu is None else cfg.cpu,
            memory_mb=default.memory_mb if cfg.memory_mb is None else cfg.memory_mb,
            gpu=cfg.gpu,
            packages={manager: list(names) for manager, names in cfg.packages.items()},
            setup=list(cfg.setup),
            env=dict(cfg.env),
            working_dir=cfg.working_dir,
            mount_paths=list(cfg.mount_paths),
            networking=_networking(cfg.network),
            auto_shutdown=cfg.auto_shutdown,
            idle_timeout_s=cfg.idle_timeout_s,
            metadata=dict(cfg.metadata),
        )


def _networking(network: object) -> dict[str, Any]:
    if isinstance(network, NetworkAllow):
        return {"type": "limited", "allowed_hosts": list(network.allow)}
    return {"type": str(network)}


def instance_id_of(info: object) -> object:
    """What ``provision`` returned names the instance: its ``instance_id``, or itself (as
    PraisonAI's SharedCompute reads it)."""
    return getattr(info, "instance_id", info)


def text_of(value: object) -> str:
    """A stream of a result as text: bytes decoded (invalid UTF-8 replaced), ``None`` empty."""
    if value is None:
        return ""
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


def result_fields(result: object) -> tuple[str, str, int]:
    """``(stdout, stderr, exit_code)`` of what ``execute`` returned: a dict, or anything else
    read as stdout of a command that succeeded, and a missing exit code as 0 (as PraisonAI's
    SharedCompute reads them). An exit code that is not a number is -1: the outcome is unknown."""
    if not isinstance(result, Mapping):
        return text_of(result), "", 0
    code = result.get("exit_code") or 0
    try:
        exit_code = int(code)
    except (TypeError, ValueError):
        exit_code = -1
    return text_of(result.get("stdout")), text_of(result.get("stderr")), exit_code


def exec_result_of(request: ExecRequest, stdout: str, stderr: str, exit_code: int) -> ExecResult:
    """What the object's ``execute`` returned, as our result for ``request``: each stream capped
    to ``request.max_output`` as every provider caps it, handed to ``request.on_output`` (at the
    end: the object returns output only then), and timed out when ``timeout(1)`` said so (124)."""
    out, err = OutputBuffer(request.max_output), OutputBuffer(request.max_output)
    out.write(stdout.encode())
    err.write(stderr.encode())
    if request.on_output is not None:
        if stdout:
            request.on_output("stdout", stdout.encode())
        if stderr:
            request.on_output("stderr", stderr.encode())
    timed_out = request.timeout is not None and exit_code == TIMEOUT_EXIT_CODE
    return exec_result(exit_code, out, err, timed_out=timed_out)


def usable_id(text: str) -> bool:
    """Whether an instance id the object returned can serve as ours: printable text, not too long."""
    return bool(text) and text.isprintable() and len(text.encode()) <= MAX_NAME_BYTES


def status_of(status: object) -> InstanceStatus:
    """The object's status (PraisonAI's ``InstanceStatus`` or its value) as ours; what we do not
    know reads as running, since the object answered for the instance."""
    value = getattr(status, "value", status)
    known = {s.value for s in InstanceStatus}
    return InstanceStatus(value) if value in known else InstanceStatus.RUNNING
