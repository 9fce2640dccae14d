"""``ComputeConfig``: what a user asks of an instance. Validated once, here, by pydantic."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictInt,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from praisonai._errors import ConfigError
from praisonai._lifetime import Lifetime, check_setting
from praisonai._limits import (
    DEFAULT_IDLE_TIMEOUT_S,
    MAX_ENV_BYTES,
    MAX_ENV_ENTRY_BYTES,
    SETUP_TIMEOUT_S,
    check_number,
    check_timeout,
)
from praisonai.compute import hostmounts
from praisonai.compute.dataclass_fields import changed_fields
from praisonai.compute.hostmounts import OPT_IN, host_mount_refusal
from praisonai.compute.network import Network as Network
from praisonai.compute.network import NetworkAllow as NetworkAllow
from praisonai.compute.network import network_from_praisonai as network_from_praisonai
from praisonai.compute.network import networking_data as networking_data
from praisonai.compute.options import bounded

_ENV_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# PEP 508-ish: a name, optional extras and version specifiers or a URL. No leading dash, no spaces,
# so nothing can be read as an option; names still travel as separate argv items, never via a shell.
_PACKAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._\-\[\],<>=!~@:/+*]*\Z")
_LABEL_KEY = re.compile(r"[a-z0-9][a-z0-9._\-/]*\Z")

PackageManager = Literal["pip", "apt", "npm"]
#: The OCI runtimes an instance can ask for: runc (the host's kernel) or runsc (gVisor).
Runtime = Literal["runc", "runsc"]


def check_env_values(env: dict[str, str]) -> None:
    """Refuse values no program could be started with: a NUL byte, text that is not UTF-8, one
    ``NAME=value`` over ``MAX_ENV_ENTRY_BYTES`` or all of them over ``MAX_ENV_BYTES`` (Linux's
    E2BIG). Values are never shown: they may be secrets.

    Raises:
        ValueError: one sentence naming the variable and the limit.
    """
    total = 0
    for key, value in env.items():
        if "\0" in value:
            raise ValueError(f"env {key}: the value contains a NUL byte, which no environment can hold")
        try:
            size = len(key) + 1 + len(value.encode())
        except UnicodeEncodeError:
            raise ValueError(
                f"env {key}: the value is not UTF-8 text (it came from undecodable bytes)"
            ) from None
        if size > MAX_ENV_ENTRY_BYTES:
            raise ValueError(
                f"env {key}: {size} bytes is more than one variable can hold ({MAX_ENV_ENTRY_BYTES}, "
                f"Linux's limit); pass large data as a file (write_file or upload) instead"
            )
        total += size + 1
    if total > MAX_ENV_BYTES:
        raise ValueError(
            f"env holds {total} bytes in all, more than {MAX_ENV_BYTES}; pass large data as files instead"
        )


def _gpu_count(value: object) -> object:
    """A GPU count is bounded like every number; a type name ("A100") is the provider's to read."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            check_number(value, "gpu")
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
    return value


class ComputeConfig(BaseModel):
    """The shape of an instance. Attribute names follow PraisonAI's ``ComputeConfig``.

    ``None`` means "the provider's default" (for example the docker provider's image, 1 CPU and
    1024 MiB). A field the chosen provider cannot honour is rejected when provisioning, never
    silently dropped.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    image: str | None = None
    """Image to start from (providers with the ``image`` capability)."""
    cpu: Annotated[float | None, bounded("cpu")] = None
    """CPU cores the instance may use."""
    memory_mb: Annotated[int | None, bounded("memory_mb")] = None
    """Memory ceiling in MiB."""
    gpu: Annotated[str | int | None, BeforeValidator(_gpu_count)] = None
    """A GPU request: a count, or a vendor type name where the provider takes one."""
    packages: dict[PackageManager, list[str]] = Field(default_factory=dict)
    """Packages installed after start, per manager: ``{"pip": ["requests>=2"], "apt": ["jq"]}``."""
    setup: list[str] = Field(default_factory=list)
    """Shell commands run once after packages, in order; the first failure fails provisioning."""
    refresh: list[str] = Field(default_factory=list)
    """Shell commands run instead of packages and setup when the instance starts from a capture."""
    capture: bool = True
    """Capture the instance after packages and setup succeed (providers with ``capture``), so the
    next provision of the same definition starts from it."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment variables of every command in the instance."""
    working_dir: str = "/workspace"
    """Directory commands start in and relative paths resolve against."""
    allow_host_mounts: bool = False
    """Allow ``mount_paths`` of the engine's socket, ``/``, host system directories, other users'
    homes and credential stores (``praisonai.compute.hostmounts``), refused without it. A
    permission of the caller, never of a repository's environment file; not part of the definition."""
    command_user: Literal["user", "root"] = "user"
    """Who the instance's commands run as where the provider runs what frames their results as
    root (docker's and kubernetes' exec helper; Fly's and Tenki's job files and runners:
    ``compute.separation``): ``"user"``, uid 1000 (``user``, HOME ``/home/user``), which cannot
    see into, signal or trace that framing, read its secrets or change the results it frames;
    ``"root"``, the framing's own user, which gives that up (a command can then forge other
    calls' results). Packages and setup run as root either way. A permission of the caller,
    never of a repository's environment file; not part of the definition."""
    mount_paths: list[str] = Field(default_factory=list)
    """Host paths bound into the instance, ``"HOST:INSTANCE"`` or ``"HOST:INSTANCE:ro"``."""
    # Each mount's host path as its check resolved it (``_checked_mounts``), by HOST as written.
    _mount_sources: dict[str, hostmounts.Resolved] = PrivateAttr(default_factory=dict)
    disk_mb: Annotated[int | None, bounded("disk_mb")] = None
    """Disk ceiling in MiB (providers with ``disk_limit``)."""
    network: Network = "unrestricted"
    """``"none"`` cuts the instance off every network; ``{"allow": [hosts]}`` keeps only those.
    PraisonAI's ``networking=`` is read into it (:func:`network_from_praisonai`)."""
    ports: list[StrictInt] = Field(default_factory=list)
    """Ports a vendor that needs them up front (Modal) opens at creation, for ``expose``; any
    other port is still reached through the exec relay. Other providers reach every port anyway."""
    runtime: Runtime | None = None
    """``"runsc"``: the instance runs under gVisor (a user-space kernel between it and the host),
    checked when it starts; ``"runc"``: a plain container on the host's kernel; ``None``: the
    provider's default. Providers with the ``gvisor`` or ``runc`` capability."""
    auto_shutdown: bool = True
    """Stop the instance when it has been idle for ``idle_timeout_s``."""
    idle_timeout_s: int = DEFAULT_IDLE_TIMEOUT_S
    """Seconds without exec or file activity before an idle instance stops (with ``auto_shutdown``).
    The environment file's ``idle_timeout``."""
    ttl_s: int | None = None
    """Seconds after which the instance stops however busy it is (``None``: no limit). The
    environment file's ``ttl``. These fields are read together as :attr:`lifetime`."""
    idle_action: Literal["stop", "pause"] = "stop"
    """What idleness does: ``stop`` removes the instance, ``pause`` keeps its filesystem and the
    next call resumes it (providers with ``Capability.PAUSE``). The environment file's ``idle_action``."""
    retain_s: int | None = None
    """Seconds a paused instance is kept after its last activity before it is removed (by the
    home's reaper process, or ``praisonai compute gc``; ``None``: until removed). The environment
    file's ``retain``."""
    setup_timeout_s: float | None = SETUP_TIMEOUT_S
    """Seconds each package install and each setup or refresh command may run before provisioning
    fails (default 900; ``None``: no limit). The environment file's ``setup_timeout``."""
    labels: dict[str, str] = Field(default_factory=dict)
    """Extra labels recorded on the instance (server-side where the provider has labels)."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free-form data kept with the instance; never interpreted by providers."""

    @model_validator(mode="before")
    @classmethod
    def _praisonai_networking(cls, data: Any) -> Any:
        """PraisonAI's field ``networking`` (its ComputeConfig's) is read as ``network``; ``None``
        is not given."""
        if not isinstance(data, dict) or "networking" not in data:
            return data
        data = dict(data)
        networking = data.pop("networking")
        if networking is not None and "network" in data:
            raise ValueError("give network or PraisonAI's networking, not both")
        if networking is not None:
            data["network"] = network_from_praisonai(networking)
        return data

    @field_validator("env")
    @classmethod
    def _env_keys(cls, env: dict[str, str]) -> dict[str, str]:
        for key in env:
            if not _ENV_KEY.match(key):
                raise ValueError(f"{key!r} is not a valid environment variable name")
        check_env_values(env)
        return env

    @field_validator("packages")
    @classmethod
    def _package_names(cls, packages: dict[str, list[str]]) -> dict[str, list[str]]:
        for manager, names in packages.items():
            for name in names:
                if not _PACKAGE.match(name):
                    raise ValueError(f"{manager} package {name!r} is not a package specifier")
        return packages

    @field_validator("working_dir")
    @classmethod
    def _absolute_dir(cls, path: str) -> str:
        if not path.startswith("/"):
            raise ValueError(f"working_dir must be an absolute path, not {path!r}")
        return path.rstrip("/") or "/"

    @field_validator("mount_paths")
    @classmethod
    def _mount_specs(cls, mounts: list[str]) -> list[str]:
        for spec in mounts:
            parts = spec.split(":")
            if len(parts) not in (2, 3) or not all(p.startswith("/") for p in parts[:2]):
                raise ValueError(f"mount {spec!r} is not HOST:INSTANCE[:ro] with absolute paths")
            if len(parts) == 3 and parts[2] not in ("ro", "rw"):
                raise ValueError(f"mount {spec!r}: the mode must be 'ro' or 'rw'")
        return mounts

    @model_validator(mode="after")
    def _checked_mounts(self) -> ComputeConfig:
        """Each mount's host path, resolved once: that resolved path is what is checked (unless
        ``allow_host_mounts``) and what a local engine is given (:meth:`mount_source`), so a link
        repointed after the check changes nothing."""
        for spec in self.mount_paths:
            host = spec.split(":")[0]
            checked = hostmounts.resolve(host)
            why = None if self.allow_host_mounts else host_mount_refusal(host, checked.path)
            if why:
                raise ValueError(f"mount {spec!r} refused: {why}; remove it, or {OPT_IN}")
            self._mount_sources[host] = checked
        return self

    def mount_source(self, host: str) -> str:
        """The path a local engine is given for the mount of ``host`` (as written in
        ``mount_paths``): the one its check resolved, once seen unchanged since
        (``hostmounts.as_checked``); one this config never checked is checked now.

        Raises:
            ConfigError: the path changed since it was checked, or is refused now.
        """
        checked = self._mount_sources.get(host)
        if checked is None:
            checked = hostmounts.resolve(host)
            why = None if self.allow_host_mounts else host_mount_refusal(host, checked.path)
            if why:
                raise ConfigError(f"mount of {host} refused: {why}; remove it, or {OPT_IN}", op="provision")
        return hostmounts.as_checked(host, checked)

    @field_validator("ports")
    @classmethod
    def _tcp_ports(cls, ports: list[int]) -> list[int]:
        for port in ports:
            if not 1 <= port <= 65535:
                raise ValueError(f"{port} is not a TCP port; give ports from 1 to 65535")
            if ports.count(port) > 1:
                raise ValueError(f"{port} is listed twice")
        return ports

    @field_validator("idle_timeout_s", "ttl_s", "retain_s", mode="before")
    @classmethod
    def _lifetime_seconds(cls, value: object, info: ValidationInfo) -> object:
        check_setting(str(info.field_name), value)  # refuses True and "5" too, like setup_timeout_s
        return value

    @field_validator("setup_timeout_s", mode="before")
    @classmethod
    def _setup_timeout(cls, value: object) -> object:
        return check_timeout(value, "setup_timeout_s", allow_zero=False)  # refuses True and "5" too

    @field_validator("labels")
    @classmethod
    def _label_keys(cls, labels: dict[str, str]) -> dict[str, str]:
        for key in labels:
            if not _LABEL_KEY.match(key):
                raise ValueError(f"label key {key!r} must be lower-case letters, digits, . _ - /")
        return labels

    @property
    def lifetime(self) -> Lifetime:
        """When the instance stops by itself: ``auto_shutdown``, ``idle_timeout_s`` and ``ttl_s``
        as the one policy value every reaper, the ledger row and docker's watchdog read."""
        return Lifetime(self.auto_shutdown, self.idle_timeout_s, self.ttl_s, self.idle_action, self.retain_s)

    @classmethod
    def coerce(cls, value: object = None) -> ComputeConfig:
        """Accept ``None``, a ``ComputeConfig``, a dict, or a config object from PraisonAI's SDK.

        A foreign object is read by attribute name; for a dataclass, only fields that differ from
        its declared defaults are taken, so its defaults mean "provider default" here too.

        Raises:
            ConfigError: a value is invalid; the message names the field and the reason.
        """
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, str | bytes | int | float | list | tuple | set):  # bool is an int
            raise ConfigError(
                f"config must be a ComputeConfig, a dict or a config object, not {type(value).__name__}",
                op="config",
            )
        data = value if isinstance(value, dict) else _foreign_fields(value)
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(_describe(exc), op="config") from None

    def with_default_env(self) -> ComputeConfig:
        """This config with :data:`DEFAULT_ENV` under its own env (its values win); what
        provisioning gives the instance. Its hashes are this config's."""
        if all(name in self.env for name in DEFAULT_ENV):
            return self
        return self.model_copy(update={"env": {**DEFAULT_ENV, **self.env}})

    def split_env(self) -> tuple[dict[str, str], dict[str, str]]:
        """The env as (its :data:`DEFAULT_ENV` entries, the rest). The defaults hold no secret, so a
        provider may put them where its env is visible (docker: the container's config, costing no
        channel at start); the rest is the config's own: hashes leave the defaults out, so a config
        and its :meth:`with_default_env` are one definition."""
        defaults = {name: value for name, value in self.env.items() if DEFAULT_ENV.get(name) == value}
        return defaults, {name: value for name, value in self.env.items() if name not in defaults}

    def definition_hash(self) -> str:
        """A short hash of the definition that is safe to show: env and label *values* are left out."""
        shape = self.model_dump(
            mode="json", exclude={"metadata", "setup_timeout_s", "allow_host_mounts", "command_user"}
        )
        shape["env"] = sorted(self.split_env()[1])
        shape["labels"] = sorted(self.labels)
        for key in ("idle_action", "retain_s", "ports"):  # hashes made before these fields stay valid
            if shape[key] == type(self).model_fields[key].get_default(call_default_factory=True):
                del shape[key]
        return _digest(shape)[:16]

    def capture_key(self) -> str:
        """What decides whether a capture can be reused: everything that shapes the instance's
        files after setup, env *values* included (a changed secret means a new capture). Never
        show it; name captures by :meth:`capture_tag` instead."""
        return _digest({**self.model_dump(mode="json", include=_CAPTURED), "env": self.split_env()[1]})

    def capture_tag(self) -> str:
        """A name for this definition's capture that reveals nothing of the capture key."""
        return _digest({"capture": self.capture_key()})[:20]


#: What every instance's environment holds unless its config sets it: no bytecode files, so a fast
#: edit-and-test loop never imports a stale ``.pyc`` (CPython compares a source's mtime in whole
#: seconds: an edit within the second of the last import went unseen).
DEFAULT_ENV: Mapping[str, str] = {"PYTHONDONTWRITEBYTECODE": "1"}

# What a capture holds: the files that packages and setup produced from the image, with this env.
_CAPTURED = {"image", "packages", "setup", "env", "working_dir", "mount_paths"}


def _digest(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _foreign_fields(obj: object) -> dict[str, Any]:
    names = set(ComputeConfig.model_fields) | {"networking"}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        data = {name: value for name, value in changed_fields(obj).items() if name in names}
    else:
        data = {name: getattr(obj, name) for name in names if hasattr(obj, name)}
    return data  # a "networking" among them is read by ComputeConfig's own validator


def _describe(exc: ValidationError) -> str:
    problems = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"])
        message = err["msg"].removeprefix("Value error, ")
        problems.append(message if not where or message.startswith(f"{where} ") else f"{where}: {message}")
    return "invalid compute config: " + "; ".join(problems)
