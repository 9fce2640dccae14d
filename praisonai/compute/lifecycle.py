"""An instance's life around the provider's primitives: ledger rows, labels, setup, captures.

Generic for every provider: :func:`provision` writes the instance's ledger row before the
instance exists and removes both on failure; :func:`build` brings a new instance to its
definition (packages, setup), saving the result as a snapshot under a file lock and starting later
instances of the same definition from it (a failed setup is never captured); :func:`run_once`
is the one-shot path (``docker run --rm``). The provider supplies only the primitives (``_create``,
``_destroy``) and its parts (the ``capturer``, the ``launcher``);
:class:`~praisonai.compute.base.ComputeProvider` calls in here.
"""

from __future__ import annotations

import contextlib
import functools
import getpass
import hmac
import logging
import os
import re
import shlex
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from praisonai._errors import (
    AuthenticationError,
    ConfigError,
    ForeignInstanceError,
    HomeUnusableError,
    MissingDependencyError,
    ProviderUnavailableError,
    ProvisionError,
)
from praisonai._home import home_path, home_tag
from praisonai._ledger import Ledger
from praisonai._lifetime import Lifetime
from praisonai._locks import file_lock
from praisonai._types import ExecResult, InstanceInfo
from praisonai.compute import _activity, _home_reaper, _reaper
from praisonai.compute.config import ComputeConfig, PackageManager
from praisonai.compute.sdks import check_installed

if TYPE_CHECKING:
    from praisonai._types import ExecRequest
    from praisonai.compute.abilities import Launcher
    from praisonai.compute.base import ComputeProvider

#: Long provisioning steps (packages, setup, capture), one INFO line each, for a progress display.
progress = logging.getLogger("praisonai.progress")
log = logging.getLogger("praisonai.lifecycle")

#: Label keys every provider records server-side, so any process can find and reap instances.
LABEL_INSTANCE = "praisonai.instance"
LABEL_PROVIDER = "praisonai.provider"
LABEL_OWNER = "praisonai.owner"
LABEL_DEFINITION = "praisonai.definition"
LABEL_CREATED = "praisonai.created"
#: ``pause`` on an instance that idleness pauses rather than removes (``idle_action='pause'``).
LABEL_IDLE_ACTION = "praisonai.idle-action"
#: A paused instance's retain age in seconds (``gc`` removes it once idle that long; ``_retain``).
LABEL_RETAIN = "praisonai.retain"
#: Which PRAISONAI_HOME made the instance (``_ledger.home_tag``): ``gc`` touches only its own.
LABEL_HOME = "praisonai.home"


def new_instance_id(provider: str) -> str:
    """A fresh instance id of ``provider`` (the form ``base.INSTANCE_ID`` accepts)."""
    return f"{provider}_{uuid.uuid4().hex[:12]}"


#: How an instance is made and brought to its definition: ``(instance_id, cfg, labels)``.
Make = Callable[[str, ComputeConfig, dict[str, str]], Awaitable[InstanceInfo]]


async def provision(
    provider: ComputeProvider, cfg: ComputeConfig, *, make: Make | None = None
) -> InstanceInfo:
    """``provider.provision`` once ``cfg`` is checked: ledger row, adoption by this process's
    reaper, :func:`build` (or ``make``: from a snapshot, ``compute.snapshots``), "running"; on any
    failure (or cancellation) the instance and its row go. A missing SDK is said first, with its
    extra (a provider constructed directly is not checked by the registry)."""
    check_installed(provider)
    cfg = cfg.with_default_env()
    instance_id = new_instance_id(provider.name)
    ledger = Ledger.default()
    lifetime = cfg.lifetime
    try:
        await record(provider, instance_id, lifetime, ledger)
        _activity.adopt(instance_id, provider, lifetime, ledger)
        if _home_reaper.watches(provider.name, lifetime):  # someone must stop it if this process dies
            await anyio.to_thread.run_sync(_home_reaper.ensure_running)
        made = make or functools.partial(build, provider)
        info = await made(instance_id, cfg, labels(provider.name, instance_id, cfg))
        await _off_loop(ledger.mark, instance_id, "running")
    except BaseException as exc:
        with anyio.CancelScope(shield=True):
            await discard(provider, instance_id, ledger, exc)
        raise
    _activity.ready(instance_id)
    if lifetime.reaps:
        _reaper.ensure_running()
    log.info("provisioned %s (%s)", instance_id, provider.name)
    return info


async def run_once(
    provider: ComputeProvider,
    launcher: Launcher,
    cfg: ComputeConfig,
    request: ExecRequest,
    on_start: Callable[[], None] | None,
) -> ExecResult:
    """``provider.run_once`` once ``cfg`` and ``request`` are checked, through the provider's
    ``launcher``: the instance has a ledger row from before it exists until the launch returned
    (it is gone then); a failure or cancellation removes the instance and its row before this
    returns."""
    check_installed(provider)
    cfg = cfg.with_default_env()
    instance_id = new_instance_id(provider.name)
    ledger = Ledger.default()
    started = time.monotonic()
    try:
        await record(provider, instance_id, cfg.lifetime, ledger)
        result = await launcher.launch(
            instance_id, cfg, labels(provider.name, instance_id, cfg), request, on_start
        )
    except BaseException as exc:
        with anyio.CancelScope(shield=True):
            await discard(provider, instance_id, ledger, exc)
        raise
    with anyio.CancelScope(shield=True):  # the launch returned: the instance is gone, its row goes too
        await _off_loop(ledger.forget, instance_id)
    log.info(
        "ran %s once in %s, removed with its end (exit %s)", instance_id, provider.name, result.exit_code
    )
    return result.replace(duration_s=time.monotonic() - started)


async def forget(instance_id: str) -> None:
    """After a shutdown: the instance is gone, so its row and this process's tracking go too."""
    await _off_loop(Ledger.default().forget, instance_id)
    _activity.release(instance_id)


async def mark(instance_id: str, state: str) -> None:
    """Set the instance's ledger state (``paused``, ``running``); an unknown id stays unknown.
    This process's reaper then lets a paused instance be, but for its ttl and retain age; either
    state is the home's reaper's where it must be (``_home_reaper.watches``; a paused docker
    instance's watchdog is stopped or frozen with it)."""
    _activity.paused(instance_id, state == "paused")
    await _off_loop(Ledger.default().mark, instance_id, state)
    await _off_loop(_home_reaper.ensure_running_if_needed)


# ---- ledger rows -------------------------------------------------------------------------------


async def record(provider: ComputeProvider, instance_id: str, lifetime: Lifetime, ledger: Ledger) -> None:
    """The instance's ledger row, written before it exists, so that an instance whose creator
    dies mid-way is still found."""
    spec, owner = provider.options.to_record(), owner_tag()
    write = functools.partial(ledger.record, lifetime=lifetime)
    await _off_loop(write, instance_id, provider.name, spec, owner, time.time())


async def discard(
    provider: ComputeProvider, instance_id: str, ledger: Ledger, failure: BaseException | None = None
) -> None:
    """Undo a failed provision: remove what it made, then its row. When the removal fails
    too, the row goes anyway if both the provision (``failure``) and the removal were refused
    before the provider took anything (:func:`refused`: no key, no engine, no kubeconfig):
    nothing can exist, and a row would say "unreachable" forever. Otherwise (the engine or host
    stopped answering mid-way: the outcome is unknown) the row is marked ``failed``, which
    ``stop`` and ``gc`` reconcile; the caller still gets the provision's own error."""
    try:
        await provider._destroy(instance_id)
    except Exception as exc:
        with contextlib.suppress(HomeUnusableError):  # the provision's error matters more
            if refused(failure) and refused(exc):
                await _off_loop(ledger.forget, instance_id)
            else:
                await _off_loop(ledger.mark, instance_id, "failed")
    else:
        await _off_loop(ledger.forget, instance_id)  # only once it is surely gone
    finally:
        _activity.release(instance_id)


def refused(error: BaseException | None) -> bool:
    """Whether ``error`` is a refusal before any request reached the provider: bad or missing
    credentials, a missing SDK, a configuration the client cannot load, or no connection at all
    to the engine. A timeout or a dropped connection is not: the request may have been taken."""
    if isinstance(error, ProviderUnavailableError):
        return error.op == "connect"
    return isinstance(error, AuthenticationError | MissingDependencyError | ConfigError)


def labels(provider: str, instance_id: str, cfg: ComputeConfig) -> dict[str, str]:
    """The labels a new instance carries server-side: the config's, then ours (which win)."""
    return {
        **cfg.labels,
        LABEL_INSTANCE: instance_id,
        LABEL_PROVIDER: provider,
        LABEL_OWNER: owner_tag(),
        LABEL_DEFINITION: cfg.definition_hash(),
        LABEL_CREATED: str(int(time.time())),
        LABEL_HOME: home_tag(),
        **({LABEL_IDLE_ACTION: "pause"} if cfg.lifetime.pauses else {}),
        **({LABEL_RETAIN: str(cfg.retain_s)} if cfg.retain_s is not None else {}),
    }


#: An owner tag as ``owner_tag`` makes it; a label that is not one is not repeated in a message.
_OWNER = re.compile(r"[\w.-]{1,64}@[\w.-]{1,253}:\d{1,10}")


def check_home(instance_id: str, labels: Mapping[str, str], op: str) -> None:
    """Refuse an instance another home made: its ``praisonai.home`` label is not this home's
    (``_home.home_tag``, which another home can neither read off the label nor make). Called with
    the labels read before anything else touches the instance. One without the label (a provider
    that keeps none) is not refused: nothing says another home made it.

    Raises:
        ForeignInstanceError: one sentence naming the instance, its maker and what to do.
    """
    theirs = labels.get(LABEL_HOME)
    if theirs is None or hmac.compare_digest(theirs.encode(), home_tag().encode()):
        return
    owner = labels.get(LABEL_OWNER, "")
    made_by = f" (made by {owner})" if _OWNER.fullmatch(owner) else ""
    raise ForeignInstanceError(
        f"instance {instance_id}{made_by} belongs to another praisonai home, not to this one "
        f"({home_path()}): use it from the home that made it, with PRAISONAI_HOME set to that home",
        op=op,
    )


def owner_tag() -> str:
    """Who created an instance: ``user@host:pid`` (lets ``gc`` tell live owners from dead ones)."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    return f"{user}@{socket.gethostname()}:{os.getpid()}"


# ---- bringing an instance to its definition ----------------------------------------------------


async def build(
    provider: ComputeProvider, instance_id: str, cfg: ComputeConfig, labels: dict[str, str]
) -> InstanceInfo:
    """Create the instance and bring it to its definition.

    With a snapshot of this definition (providers with a ``capturer``), start from it and run
    only ``refresh``. Otherwise install packages and run setup, then snapshot the result, under a
    lock that makes a second process provisioning the same definition wait and reuse it.
    A failed setup raises before anything is captured.
    """
    capturer = provider.capturer
    if capturer is None or not (cfg.capture and (cfg.packages or cfg.setup)):  # nothing to save
        info = await provider._create(instance_id, cfg, labels)
        await run_steps(provider, instance_id, [*package_commands(cfg.packages), *cfg.setup], cfg)
        return info
    tag = cfg.capture_tag()
    snapshot = await capturer.find(tag)
    if snapshot is None:

        def waiting(holder: str) -> None:
            progress.info(f"waiting for {holder}, which is making capture {tag}")

        async with file_lock(f"capture-{tag}", waiting=waiting):
            snapshot = await capturer.find(tag)  # made by another process while we waited
            if snapshot is None:
                info = await provider._create(instance_id, cfg, labels)
                await run_steps(provider, instance_id, [*package_commands(cfg.packages), *cfg.setup], cfg)
                progress.info("capturing the instance for later starts")
                await capturer.save(instance_id, tag, cfg)
                log.info("captured %s as %s", instance_id, tag)
                return info
    if snapshot.provider != provider.name:
        raise ProvisionError(
            f"the {provider.name} provider found a {snapshot.provider} snapshot for capture {tag}",
            op="provision",
        )
    info = await capturer.create_from(instance_id, cfg, labels, snapshot)
    await run_steps(provider, instance_id, cfg.refresh, cfg)
    return info


async def run_steps(
    provider: ComputeProvider, instance_id: str, steps: Sequence[str], cfg: ComputeConfig
) -> None:
    """Run packages/setup/refresh commands in order, each within ``cfg.setup_timeout_s``;
    the first failure raises ProvisionError."""
    for number, step in enumerate(steps, 1):
        progress.info(f"setup {number}/{len(steps)}: {step}")
        # the repository's definition, run before any command of the model's: as the instance's
        # own user (root on docker), which installs packages
        result = await provider.execute(instance_id, step, timeout=cfg.setup_timeout_s, privileged=True)
        if not result.ok:
            detail = (result.stderr or result.stdout).strip()[-2000:]
            limit = f"its setup_timeout of {cfg.setup_timeout_s:g}s"
            why = f"timed out after {limit}" if result.timed_out else f"exited {result.exit_code}"
            raise ProvisionError(f"setup step {step!r} {why}: {detail}", op="provision")
    if steps:
        await provider._after_setup(instance_id)


def package_commands(packages: Mapping[PackageManager, list[str]]) -> list[str]:
    """One install command per manager. Names were validated (no leading dash) and are quoted."""
    quoted = {
        manager: " ".join(shlex.quote(n) for n in names) for manager, names in packages.items() if names
    }
    commands = {
        "apt": "apt-get update -qq && DEBIAN_FRONTEND=noninteractive "
        "apt-get install -y -qq --no-install-recommends {}",
        # The instance is the environment: Debian's "externally managed" guard does not apply.
        "pip": "PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --no-input --disable-pip-version-check {}",
        "npm": "npm install --global --no-fund --no-audit {}",
    }
    return [commands[m].format(quoted[m]) for m in ("apt", "pip", "npm") if m in quoted]


async def _off_loop(fn: Callable[..., None], *args: Any) -> None:
    """A ledger write in a worker thread: it may wait on another process's lock."""
    await anyio.to_thread.run_sync(fn, *args)
