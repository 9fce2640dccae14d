"""The one idle/ttl rule (``praisonai._lifetime.Lifetime``) and everything that reads it.

The rule: idle applies only with ``auto_shutdown``; the ttl always. Each consumer (the in-process
reaper, the home's reaper, gc through the ledger row, docker's watchdog arguments) measures time
its own way and must reach the same verdict from the same lifetime.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from praisonai import ComputeConfig, ConfigError
from praisonai._ledger import Ledger, LedgerEntry
from praisonai._lifetime import DEFAULT_LIFETIME, Lifetime, check_setting, whole_units
from praisonai._types import Capability
from praisonai.compute import _activity, _home_reaper, _reaper
from praisonai.compute.providers.local import LocalCompute
from praisonai.compute.watchdog import watchdog_command

# ---- the rule ----------------------------------------------------------------------------------


def test_idle_stops_an_instance_only_with_auto_shutdown() -> None:
    on, off = Lifetime(True, 10), Lifetime(False, 10)
    assert on.idle_limit_s == 10 and off.idle_limit_s is None
    assert on.expired(idle_s=10, age_s=0) == "idle for 10s (idle_timeout_s=10)"
    assert on.expired(idle_s=9.9, age_s=0) is None
    assert off.expired(idle_s=10**9, age_s=10**9) is None  # no ttl either: it never stops


def test_the_ttl_applies_always_and_before_idleness() -> None:
    for auto_shutdown in (True, False):
        lifetime = Lifetime(auto_shutdown, 10, ttl_s=60)
        assert lifetime.expired(idle_s=0, age_s=60) == "60s old (ttl_s=60)"  # busy, and still
        assert lifetime.expired(idle_s=0, age_s=59.9) is None
    assert Lifetime(True, 10, 60).expired(idle_s=100, age_s=61) == "61s old (ttl_s=60)"


def test_reaps_says_whether_anything_ever_stops_the_instance() -> None:
    assert Lifetime(True, 10).reaps and Lifetime(False, 10, 60).reaps
    assert not Lifetime(False, 10).reaps


def test_the_defaults_are_compute_configs() -> None:
    assert ComputeConfig().lifetime == DEFAULT_LIFETIME == Lifetime() == Lifetime(True, 300, None)


# ---- validation: one check, one wording ---------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"idle_timeout_s": 0}, "idle_timeout_s must be greater than 0 seconds, not 0"),
        ({"idle_timeout_s": -5}, "idle_timeout_s must be greater than 0 seconds, not -5"),
        ({"idle_timeout_s": float("nan")}, "idle_timeout_s must be greater than 0 seconds, not nan"),
        ({"idle_timeout_s": None}, "idle_timeout_s must be a number of seconds, not None"),
        ({"idle_timeout_s": True}, "idle_timeout_s must be a number of seconds, not bool True"),
        ({"idle_timeout_s": "300"}, "idle_timeout_s must be a number of seconds, not str '300'"),
        ({"ttl_s": 0}, "ttl_s must be greater than 0 seconds, or None for no limit, not 0"),
        ({"ttl_s": float("inf")}, "ttl_s must be greater than 0 seconds, or None for no limit, not inf"),
        ({"ttl_s": "1h"}, "ttl_s must be a number of seconds, or None for no limit, not str '1h'"),
        ({"auto_shutdown": 1}, "auto_shutdown must be true or false, not int 1"),
    ],
)
def test_an_invalid_lifetime_is_refused_naming_the_setting(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Lifetime(**kwargs)  # type: ignore[arg-type]
    assert str(caught.value) == message
    assert isinstance(caught.value, ValueError)


def test_compute_config_validates_through_the_same_check() -> None:
    with pytest.raises(ConfigError, match=r"^invalid compute config: idle_timeout_s must be greater than 0"):
        ComputeConfig.coerce({"idle_timeout_s": 0})
    with pytest.raises(ConfigError, match=r"ttl_s must be a number of seconds, or None for no limit, not bo"):
        ComputeConfig.coerce({"ttl_s": True})  # once taken for a 1 s ttl
    assert ComputeConfig.coerce({"ttl_s": None, "idle_timeout_s": 7}).lifetime == Lifetime(True, 7)
    assert check_setting("ttl_s", None) is None and check_setting("idle_timeout_s", 5) == 5.0


def test_the_environment_file_reports_the_rule_under_its_own_key(tmp_path: Path) -> None:
    from praisonai.sandbox.environment import load_environment_file

    path = tmp_path / "environment.yaml"
    path.write_text("idle_timeout: 0\nttl: -1\n")
    with pytest.raises(ConfigError) as caught:
        load_environment_file(path)
    assert "1: idle_timeout: must be greater than 0 seconds, not 0" in str(caught.value)
    assert "2: ttl: must be greater than 0 seconds, or None for no limit, not -1" in str(caught.value)


# ---- the ledger row holds one ------------------------------------------------------------------


def test_the_ledger_row_stores_the_lifetime_and_skips_a_damaged_one(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite3")
    ledger.record("local_1", "local", {}, "o", 1.0, lifetime=Lifetime(False, 5.5, 60))
    ledger.record("local_2", "local", {}, "o", 2.0)
    with sqlite3.connect(ledger.path) as db:
        db.execute("UPDATE instances SET idle_timeout_s = 0 WHERE instance_id = 'local_2'")
    entries, problems = ledger.scan()
    assert [e.lifetime for e in entries] == [Lifetime(False, 5.5, 60)]
    assert len(problems) == 1 and "idle_timeout_s must be greater than 0 seconds, not 0" in problems[0]


# ---- every consumer reads it --------------------------------------------------------------------


def dead_owner() -> str:
    child = [sys.executable, "-c", "import os; print(os.getpid())"]
    pid = subprocess.run(child, capture_output=True, text=True, check=True).stdout.strip()
    return f"me@{socket.gethostname()}:{pid}"


def test_the_home_reaper_and_gc_apply_the_rows_lifetime_once_its_owner_is_gone() -> None:
    def row(owner: str, lifetime: Lifetime) -> LedgerEntry:
        return LedgerEntry("local_000000000001", "local", {}, owner, 0.0, "running", 0.0, lifetime)

    dead, alive = dead_owner(), f"me@{socket.gethostname()}:{os.getpid()}"
    why = _home_reaper.orphan_reason(row(dead, Lifetime(True, 2)), idle_s=3, age_s=3)
    assert why == f"its creator {dead} is gone and it was idle for 3s (idle_timeout_s=2)"
    why = _home_reaper.orphan_reason(row(dead, Lifetime(False, 2, 60)), idle_s=3, age_s=61)
    assert why == f"its creator {dead} is gone and it was 61s old (ttl_s=60)"
    assert _home_reaper.orphan_reason(row(dead, Lifetime(False, 2)), idle_s=3, age_s=61) is None
    assert _home_reaper.orphan_reason(row(alive, Lifetime(True, 2)), idle_s=3, age_s=3) is None
    watched = [row(dead, Lifetime(False, 2)), row(dead, Lifetime(True, 2)), row(dead, Lifetime(False, 2, 9))]
    assert [e.lifetime for e in _home_reaper._watched(watched)] == [Lifetime(True, 2), Lifetime(False, 2, 9)]


def test_the_in_process_reaper_reads_the_lifetime(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite3")
    entry = _activity.Tracked(now=100.0)
    entry.owned = _activity.Owned(LocalCompute(), Lifetime(False, 5, ttl_s=50), ledger, 80.0, ready=True)
    assert _reaper.reason_to_stop("local_000000000001", entry, 129.0, ledger=False) is None
    assert _reaper.reason_to_stop("local_000000000001", entry, 130.0, ledger=False) == "50s old (ttl_s=50)"
    entry.owned.lifetime = Lifetime(True, 5)
    assert _reaper.reason_to_stop("local_000000000001", entry, 104.0, ledger=False) is None
    why = _reaper.reason_to_stop("local_000000000001", entry, 105.0, ledger=False)
    assert why == "idle for 5s (idle_timeout_s=5)"


def test_the_watchdog_gets_whole_seconds_and_0_for_never() -> None:
    def limits(lifetime: Lifetime) -> list[str]:
        return watchdog_command(lifetime, "/spool")[-3:-1]

    assert limits(Lifetime(True, 300)) == ["300", "0"]
    assert limits(Lifetime(False, 300, 60)) == ["0", "60"]  # idle applies only with auto_shutdown
    assert limits(Lifetime(True, 0.5, 1.2)) == ["1", "2"]  # rounded up: never earlier than asked
    assert watchdog_command(ComputeConfig(ttl_s=9).lifetime, "/spool")[-4:] == [
        "praisonai-watchdog", "300", "9", "/spool",
    ]  # fmt: skip


def test_every_provider_takes_a_limit_in_whole_units_rounded_up() -> None:
    """One conversion for the watchdog (seconds) and Daytona (minutes): never stop early."""
    assert whole_units(None) == 0 and whole_units(2.1) == 3 and whole_units(3) == 3
    assert whole_units(61, 60) == 2 and whole_units(60, 60) == 1 and whole_units(None, 60) == 0


def test_the_home_reaper_watches_what_cannot_stop_itself_as_its_capabilities_say() -> None:
    from praisonai.compute.registry import provider_class

    reaps, pauses, never = Lifetime(True, 2), Lifetime(True, 2, idle_action="pause"), Lifetime(False, 2)
    for name in ("local", "ssh", "tenki", "docker", "e2b", "daytona", "flyio", "modal"):
        stops_itself = Capability.SELF_STOP in provider_class(name).capabilities
        assert _home_reaper.watches(name, reaps) is not stops_itself, name
        assert not _home_reaper.watches(name, never), name
    # Tenki ignores an idle timeout: only a process of ours can stop an idle one whose client died
    assert _home_reaper.watches("tenki", reaps)
    # Modal ends an idle sandbox itself, files and all: a pausing one is ours to pause
    assert not _home_reaper.watches("modal", reaps) and _home_reaper.watches("modal", pauses)
    assert not _home_reaper.watches("no-such-provider", reaps)  # nothing here could stop it


def test_a_paused_instance_goes_past_its_ttl_or_retain_age_whoever_holds_it() -> None:
    def paused(provider: str, owner: str, lifetime: Lifetime) -> LedgerEntry:
        return LedgerEntry(f"{provider}_000000000001", provider, {}, owner, 0.0, "paused", 0.0, lifetime)

    alive = f"me@{socket.gethostname()}:{os.getpid()}"
    retained, lived = Lifetime(True, 2, retain_s=60), Lifetime(True, 2, ttl_s=30)
    assert retained.paused_expired(idle_s=59, age_s=10**6) is None  # idleness alone never removes it
    assert retained.paused_expired(idle_s=60, age_s=61) == "idle for 60s (retain_s=60)"
    assert lived.paused_expired(idle_s=0, age_s=30) == "30s old (ttl_s=30)"  # a pause never extends it
    assert Lifetime(True, 2).paused_expired(idle_s=10**6, age_s=10**6) is None  # kept until removed
    # its owner lives, but runs nothing in it: the home's reaper removes it all the same
    why = _home_reaper.orphan_reason(paused("docker", alive, retained), idle_s=61, age_s=61)
    assert why == "it was paused and idle for 61s (retain_s=60)"
    # a paused docker instance's watchdog is stopped or frozen with it: the home's reaper watches it
    rows = [paused("docker", alive, lifetime) for lifetime in (retained, lived, Lifetime(True, 2))]
    assert [e.lifetime for e in _home_reaper._watched(rows)] == [retained, lived]
    assert not _home_reaper._watched([paused("e2b", alive, retained)])  # the vendor keeps it
