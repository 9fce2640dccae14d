"""When an instance stops by itself: the one idle/ttl rule, as a value.

**The rule**: an instance stops once it has been idle for ``idle_timeout_s`` — only with
``auto_shutdown`` — or once it is ``ttl_s`` old, however busy it is (``ttl_s=None``: no limit).
:attr:`Lifetime.idle_limit_s` states the first half, :meth:`Lifetime.expired` applies both.

Every mechanism that stops instances reads a :class:`Lifetime` and nothing else: the in-process
reaper (``praisonai.compute._reaper``), the home's reaper process and ``gc`` (through the ledger
row, which stores one), the watchdog docker, kubernetes and Fly instances run (its arguments),
and the vendors' own idle stops (Modal's ``idle_timeout``, Daytona's minutes, E2B's renewals).
Whole seconds or minutes come from :func:`whole_units`, rounded up. Each measures idle time and age in
its own way (monotonic time in this process; a row's wall-clock stamps; the instance's uptime) and
asks the lifetime what follows.

The three settings have one name each from ``ComputeConfig`` (``auto_shutdown``,
``idle_timeout_s``, ``ttl_s``) through this value and the ledger's columns to the watchdog's
arguments (``IDLE_TIMEOUT_S TTL_S``). ``environment.yaml`` spells them ``idle_timeout`` and
``ttl`` (its keys drop units); ``praisonai.sandbox._envmodel`` maps them, in one table.

``idle_action`` says what idleness does (``stop``: remove; ``pause``: keep the files, resumed by the
next call) and ``retain_s`` how long a paused instance is kept (``gc`` and the home's reaper remove
it then); the ledger keeps both, so the home's reaper pauses a local or SSH instance whose owner
died (docker's watchdog, its labels).

This is the core: no I/O, and nothing from a higher layer (``ComputeConfig.lifetime`` builds one).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from praisonai._errors import ConfigError
from praisonai._limits import DEFAULT_IDLE_TIMEOUT_S, MAX_SECONDS

#: The settings measured in seconds, and what ``None`` means for each (``None``: refused).
_NONE_MEANS: dict[str, str | None] = {
    "idle_timeout_s": None,
    "ttl_s": "no limit",
    "retain_s": "kept until removed",
}
#: What idleness does to an instance: ``stop`` removes it, ``pause`` keeps its filesystem.
IDLE_ACTIONS = ("stop", "pause")


def check_setting(name: str, value: object) -> float | None:
    """``value`` for the setting ``name`` (``idle_timeout_s`` or ``ttl_s``): a number of
    seconds > 0, or ``None`` where the setting takes it. The one check of both, whoever gives
    them (``ComputeConfig``, through it ``environment.yaml``, a ledger row).

    Raises:
        ConfigError: a bool, a string, NaN, infinity, zero or less, more than ``MAX_SECONDS``;
            one sentence naming ``name``.
    """
    none_means = _NONE_MEANS[name]
    if value is None and none_means is not None:
        return None
    alternative = f", or None for {none_means}" if none_means else ""
    if isinstance(value, bool) or not isinstance(value, int | float):
        shown = "None" if value is None else f"{type(value).__name__} {value!r}"
        raise ConfigError(f"{name} must be a number of seconds{alternative}, not {shown}", op="config")
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{name} must be greater than 0 seconds{alternative}, not {value!r}", op="config")
    if value > MAX_SECONDS:
        message = f"{name} must be at most {MAX_SECONDS} seconds (366 days){alternative}, not {value!r}"
        raise ConfigError(message, op="config")
    return float(value)


@dataclass(frozen=True, slots=True)
class Lifetime:
    """An instance's idle/ttl policy. Validated when built (``ConfigError``, a ``ValueError``,
    naming the setting), so every holder of one may trust it."""

    auto_shutdown: bool = True
    """Stop the instance once it has been idle for ``idle_timeout_s``."""
    idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S
    """Seconds without activity after which an idle instance stops (with ``auto_shutdown``)."""
    ttl_s: float | None = None
    """Seconds after its creation at which the instance stops however busy (``None``: never)."""
    idle_action: str = "stop"
    """What idleness does: ``stop`` removes the instance; ``pause`` keeps its filesystem (the
    provider needs ``Capability.PAUSE``) and the next call or ``connect`` resumes it."""
    retain_s: float | None = None
    """Seconds a paused instance is kept after its last activity before it is removed (by ``gc``,
    the home's reaper, the owner's reaper: :meth:`paused_expired`; ``None``: until removed)."""

    def __post_init__(self) -> None:
        if not isinstance(self.auto_shutdown, bool):
            shown = f"{type(self.auto_shutdown).__name__} {self.auto_shutdown!r}"
            raise ConfigError(f"auto_shutdown must be true or false, not {shown}", op="config")
        check_setting("idle_timeout_s", self.idle_timeout_s)
        check_setting("ttl_s", self.ttl_s)
        check_setting("retain_s", self.retain_s)
        if self.idle_action not in IDLE_ACTIONS:
            raise ConfigError(f"idle_action must be 'stop' or 'pause', not {self.idle_action!r}", op="config")

    @property
    def idle_limit_s(self) -> float | None:
        """Idle seconds after which the instance stops, or ``None`` when idleness never stops it.
        The rule's first half, written here only: idle applies only with ``auto_shutdown``."""
        return self.idle_timeout_s if self.auto_shutdown else None

    @property
    def pauses(self) -> bool:
        """Whether idleness pauses the instance (keeping its files) rather than removing it."""
        return self.idle_action == "pause"

    @property
    def reaps(self) -> bool:
        """Whether anything ever stops the instance by itself (an idle limit or a ttl)."""
        return self.idle_limit_s is not None or self.ttl_s is not None

    def past_ttl(self, age_s: float) -> str | None:
        """Why an instance ``age_s`` seconds old must stop whatever it is doing, or ``None``."""
        if self.ttl_s is not None and age_s >= self.ttl_s:
            return f"{age_s:.0f}s old (ttl_s={self.ttl_s:g})"
        return None

    def idle_too_long(self, idle_s: float) -> str | None:
        """Why an instance idle for ``idle_s`` seconds must stop, or ``None``."""
        limit = self.idle_limit_s
        if limit is not None and idle_s >= limit:
            return f"idle for {idle_s:.0f}s (idle_timeout_s={limit:g})"
        return None

    def expired(self, *, idle_s: float, age_s: float) -> str | None:
        """Why an instance idle for ``idle_s`` seconds and ``age_s`` old must be removed now, or
        ``None`` to keep it. The reason reads after "it was": ``"idle for 12s
        (idle_timeout_s=10)"``, ``"3601s old (ttl_s=3600)"``; the ttl is checked first. Idleness
        never removes an instance that it pauses (:meth:`idle_pause`)."""
        return self.past_ttl(age_s) or (None if self.pauses else self.idle_too_long(idle_s))

    def paused_expired(self, *, idle_s: float, age_s: float) -> str | None:
        """Why a paused instance idle for ``idle_s`` seconds (since its last activity: it was
        paused then at the latest) and ``age_s`` old must be removed now, or ``None`` to keep it:
        past its ttl (a pause never extends a lifetime), or idle ``retain_s``."""
        return self.past_ttl(age_s) or past_retain(idle_s, self.retain_s)

    def idle_pause(self, *, idle_s: float, age_s: float) -> str | None:
        """Why an instance that idleness pauses must be paused now, or ``None``: idle too long
        and not past its ttl (which removes it instead, :meth:`expired`)."""
        if not self.pauses or self.past_ttl(age_s) is not None:
            return None
        return self.idle_too_long(idle_s)


def past_retain(idle_s: float, retain_s: float | None) -> str | None:
    """Why a paused instance idle for ``idle_s`` seconds must go under the retain age
    ``retain_s`` (``None``: kept until removed), or ``None``; the one statement of that rule
    (``Lifetime.paused_expired``, and ``gc`` with a retain age of its own)."""
    if retain_s is not None and idle_s >= retain_s:
        return f"idle for {idle_s:.0f}s (retain_s={retain_s:g})"
    return None


def whole_units(limit: float | None, unit_s: float = 1.0) -> int:
    """``limit`` (seconds, ``None`` for none) in whole units of ``unit_s`` seconds, as a provider
    or a watchdog that counts whole seconds or minutes takes it: rounded up, so an instance never
    stops before its limit; ``0`` for no limit. The one conversion of every idle limit and ttl."""
    return 0 if limit is None else math.ceil(limit / unit_s)


#: ``ComputeConfig``'s defaults: rows of ledgers written before the policy columns existed get these.
DEFAULT_LIFETIME = Lifetime()
