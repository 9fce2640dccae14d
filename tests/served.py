"""How the tests serve each registered provider: on this machine's own service (local, bubblewrap,
docker, the test sshd) or through its vendor's wire fake (tests/fakes). Written once, as anyio
builds its backends: tests/providers/test_conformance.py runs the suite on every target here, and
a provider's own test module (``PROVIDER = "<name>"``) gets the same ``fake``, ``provider`` and
``ctx`` fixtures from tests/providers/conftest.py.

Adding a provider: one ``Target`` in :data:`TARGETS` under its registered name (a test fails until
every entry point has one)."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

import pytest
from kit import environment

from praisonai import _portal
from praisonai.compute import registry
from praisonai.compute.base import ComputeProvider
from praisonai.compute.entry_points import GROUP
from praisonai.compute.testing import CHECKS, Context, skip_reason
from praisonai.compute.testing.pause import suite as PAUSE_SUITE
from praisonai.compute.testing.snapshots import suite as SNAPSHOT_SUITE

#: The image the fakes that run a caller's image (modal, kubernetes) are given: they pull nothing.
IMAGE = "praisonai-sandbox:latest"


@dataclass
class Served:
    """A provider ready to provision on: its ``fake`` (None on a real service), the expression
    that rebuilds it in a child process (cross-process checks), the config its instances get."""

    provider: ComputeProvider
    expr: str
    fake: Any = None
    config: dict[str, Any] | None = None


Serve = Callable[[pytest.FixtureRequest], AbstractContextManager[Served]]


@dataclass(frozen=True)
class Target:
    """One way the tests serve a provider, and what the conformance suite expects of it there:
    ``not_applicable`` checks are those ``skip_reason`` must refuse (abilities it does not declare),
    ``known_gaps`` the checks it fails, each with the reason (xfail)."""

    serve: Serve
    faked: bool = False
    #: its SDK leaves handles for the garbage collector: collected after each test (see
    #: collect_sdk_garbage in conftest.py)
    sdk_garbage: bool = False
    not_applicable: frozenset[str] = frozenset()
    known_gaps: Mapping[str, str] = field(default_factory=dict)


def checks_named(*prefixes: str) -> frozenset[str]:
    """The conformance checks whose names start with one of ``prefixes``."""
    return frozenset(name for name in CHECKS if name.startswith(prefixes))


#: What a provider without a stream into the instance (one-shot exec) cannot do: sessions and the
#: helper channel's processes.
NO_CHANNEL = checks_named("session_", "bound_env", "killed_helper", "helper_killed")
#: The terminal checks, on a provider that does not declare ``Capability.PTY`` (refused there).
NO_PTY = checks_named("pty_")

#: What a provider without ``Capability.PORTS`` cannot do (``expose``).
NO_PORTS = checks_named("port_")

#: What a provider without network allowlists (no Capability.NETWORK_ALLOWLIST) does not run.
NO_EGRESS = checks_named("egress_")
#: A wire fake carries the allowlist in the vendor's request (checked in the vendor's own tests) but
#: runs commands in an unrestricted local container: enforcing it is the vendor's (or the CNI's).
FAKE_EGRESS = {name: "the wire fake records the allowlist; the vendor enforces it" for name in NO_EGRESS}


def registered() -> list[str]:
    """The providers registered by entry point (pyproject.toml), as users get them."""
    return sorted(ep.name for ep in entry_points(group=GROUP))


@contextmanager
def context(served: Served) -> Iterator[Context]:
    """One instance of ``served`` for the checks, shut down afterwards."""
    info = _portal.call(served.provider.provision, served.config)
    try:
        yield Context(served.provider, info.instance_id, provider_expr=served.expr)
    finally:
        _portal.call(served.provider.shutdown, info.instance_id)


def run_check(target: Target, ctx: Context, check: str) -> None:
    """One conformance case: a check applies unless the target says it does not (and then
    ``skip_reason`` must agree), a known gap is an expected failure."""
    reason = skip_reason(check, ctx.provider)
    assert (reason is not None) == (check in target.not_applicable), (check, reason)
    if reason:
        pytest.skip(reason)
    if check in target.known_gaps:
        pytest.xfail(target.known_gaps[check])
    _portal.call(CHECKS[check], ctx)


@contextmanager
def registered_as(name: str, cls: type[ComputeProvider]) -> Iterator[None]:
    """``cls`` registered under ``name`` for the block (this checkout's class, whatever the
    installed entry points say)."""
    registry.register(name, cls)
    try:
        yield
    finally:
        registry.unregister(name)


def _module(name: str) -> str:
    """The expression a child process imports provider package ``name`` by (no entry point needed)."""
    return f"__import__('praisonai.compute.providers.{name}', fromlist=['_'])"


# ---- real services ---------------------------------------------------------------------------


@contextmanager
def _local(request: pytest.FixtureRequest) -> Iterator[Served]:
    from praisonai.compute.providers.local import LocalCompute

    yield Served(LocalCompute(), "LocalCompute()")


@contextmanager
def _local_bwrap(request: pytest.FixtureRequest) -> Iterator[Served]:
    from praisonai.compute.providers.local import LocalCompute

    request.getfixturevalue("bwrap_ok")
    yield Served(LocalCompute(isolate=True), "LocalCompute(isolate=True)")


@contextmanager
def _docker(request: pytest.FixtureRequest) -> Iterator[Served]:
    from praisonai.compute.providers.docker import DockerCompute

    request.getfixturevalue("docker_ok")
    yield Served(DockerCompute(), "resolve_compute('docker')")


@contextmanager
def _ssh(request: pytest.FixtureRequest) -> Iterator[Served]:
    from praisonai.compute.providers.ssh import SSHCompute

    kwargs = request.getfixturevalue("sshd").connect_kwargs()
    yield Served(SSHCompute(**kwargs), f"SSHCompute(**{kwargs!r})")


@contextmanager
def _fake(request: pytest.FixtureRequest) -> Iterator[Served]:
    """FakeProvider (the package's contract-only example), registered by name: no entry point."""
    from praisonai.compute.testing.fake import FakeProvider

    root = request.getfixturevalue("tmp_path_factory").mktemp("fake")
    with registered_as("fake", FakeProvider):
        yield Served(FakeProvider(root=root), f"FakeProvider(root={str(root)!r})")


# ---- wire fakes ------------------------------------------------------------------------------


@contextmanager
def _e2b(request: pytest.FixtureRequest) -> Iterator[Served]:
    pytest.importorskip("e2b")
    request.getfixturevalue("docker_ok")
    from kit import serving_e2b

    from praisonai.compute.providers.e2b import E2BCompute

    with serving_e2b() as fake, registered_as("e2b", E2BCompute):
        yield Served(E2BCompute(), f"{_module('e2b')}.E2BCompute()", fake)


@contextmanager
def _modal(request: pytest.FixtureRequest) -> Iterator[Served]:
    modal = pytest.importorskip("modal")
    request.getfixturevalue("docker_ok")
    from fakes.modal import ModalFake

    from praisonai.compute.providers.modal import ModalCompute

    fake = ModalFake().start()
    try:
        with environment(fake.env()), registered_as("modal", ModalCompute):
            yield Served(ModalCompute(image=IMAGE), f"{_module('modal')}.ModalCompute(image={IMAGE!r})", fake)
    finally:
        fake.stop()
        gc.collect()  # the SDK's handles, while they are ours (see collect_sdk_garbage in conftest.py)
        # and what lives on (the SDK's loop thread holds its handles) stays out of every later
        # pass: one landing in pytest's rewrite of a plugin it imports for the terminal summary
        # (hypothesis) failed the run after every test passed
        gc.freeze()
        # The SDK keeps one client per process, made from the environment of its first call: this
        # fake's. Forgotten, so that the next fake served in this process gets a client of its own.
        modal.Client._set_env_client(None)


@contextmanager
def _daytona(request: pytest.FixtureRequest) -> Iterator[Served]:
    pytest.importorskip("daytona")
    request.getfixturevalue("docker_ok")
    from fakes.daytona import DaytonaFake

    from praisonai.compute.providers.daytona import DaytonaCompute

    # a "minute" of one second, so the lifetime tests see auto-stop and auto-delete happen
    with DaytonaFake(minute_s=1.0) as fake, registered_as("daytona", DaytonaCompute):
        provider = DaytonaCompute(api_key="fake-key", api_url=fake.api_url, renew_s=0.3)
        expr = f"{_module('daytona')}.DaytonaCompute(api_key='fake-key', api_url={fake.api_url!r})"
        # the key in the environment too, as a user has it: a provider rebuilt from a ledger row
        # (a snapshot's, for its removal) holds no secret
        with environment({"DAYTONA_API_KEY": "fake-key"}):
            yield Served(provider, expr, fake, {"auto_shutdown": False})


#: The Fly app the fake serves the tests in.
FLY_APP = "praisonai-test"


def fly_provider(fake: Any, **kwargs: Any) -> Any:
    """A FlyCompute on ``fake``'s Machines API (the app made on first use), with ``kwargs``."""
    from praisonai.compute.providers.flyio import FlyCompute

    args = {"api_token": "fake-token", "app": FLY_APP, "api_url": fake.api_url, "create_app": True}
    return FlyCompute(**{**args, **kwargs})


@contextmanager
def _flyio(request: pytest.FixtureRequest) -> Iterator[Served]:
    pytest.importorskip("httpx")
    request.getfixturevalue("docker_ok")
    from fakes.flyio import FlyioFake

    from praisonai.compute.providers.flyio import FlyCompute

    with FlyioFake(exec_limit_s=30.0) as fake, registered_as("flyio", FlyCompute):
        provider = fly_provider(fake)
        rebuilt = f"FlyCompute(api_token='fake-token', app={FLY_APP!r}, api_url={fake.api_url!r})"
        expr = f"{_module('flyio')}.{rebuilt}"
        try:
            yield Served(provider, expr, fake, {"auto_shutdown": False})
        finally:
            _portal.call(provider.api.aclose)


@contextmanager
def _tenki(request: pytest.FixtureRequest) -> Iterator[Served]:
    pytest.importorskip("tenki")
    request.getfixturevalue("docker_ok")
    from fakes.tenki import TenkiFake

    from praisonai.compute.providers.tenki import TenkiCompute

    with TenkiFake() as fake, registered_as("tenki", TenkiCompute):
        provider = TenkiCompute(api_key="tk_fake", api_url=fake.base_url)
        expr = f"{_module('tenki')}.TenkiCompute(api_key='tk_fake', api_url={fake.base_url!r})"
        yield Served(provider, expr, fake, {"auto_shutdown": False})


@contextmanager
def _kubernetes(request: pytest.FixtureRequest) -> Iterator[Served]:
    pytest.importorskip("kubernetes")
    request.getfixturevalue("docker_ok")
    from fakes.kubernetes import KubernetesFake

    from praisonai.compute.providers.kubernetes import KubernetesCompute

    folder = request.getfixturevalue("tmp_path_factory").mktemp("kube")
    with KubernetesFake() as fake, registered_as("kubernetes", KubernetesCompute):
        kubeconfig = str(fake.write_kubeconfig(folder / "config", namespace="sbx"))
        provider = KubernetesCompute(kubeconfig=kubeconfig, image=IMAGE)
        expr = f"{_module('kubernetes')}.KubernetesCompute(kubeconfig={kubeconfig!r}, image={IMAGE!r})"
        yield Served(provider, expr, fake, {"auto_shutdown": False})


#: The pause suite, on providers without ``Capability.PAUSE``.
NO_PAUSE = frozenset(PAUSE_SUITE.checks)
#: The snapshot suite, on providers without ``Capability.SNAPSHOT``.
NO_SNAPSHOT = frozenset(SNAPSHOT_SUITE.checks)
_NOT_STREAMED = "exec does not stream: output arrives when the command ends"
_WHOLE_STDIN = "exec takes its stdin whole: a stream is gathered to its end first"

#: Terminal checks a provider's terminals fail today, each with the reason (issue 44 moved the
#: checks each cloud provider's tests repeated into the suite, where these run on every provider).
_MISSING_PROGRAM = "pty_a_program_that_cannot_run_ends_it"
_TERMINAL_GAPS = {
    "local": {_MISSING_PROGRAM: "local starts the program itself: a missing one fails the open"},
    "local-bwrap": {_MISSING_PROGRAM: "bubblewrap ends with its own status, not 127"},
    "ssh": {
        "bound_env_reaches_terminals": "ssh's terminal sources the instance's env file, not the spool's",
        "pty_a_signal_is_128_plus_its_number": "sshd says exit-signal, which paramiko gives as -1",
        "pty_after_its_end_is_quiet_and_closes_once": "input to an ended terminal raises (channel closed)",
    },
}

#: Every target the conformance suite runs on, by its test id: each registered provider by its
#: name, local under bubblewrap, and FakeProvider.
TARGETS: dict[str, Target] = {
    "local": Target(_local, not_applicable=NO_EGRESS, known_gaps=_TERMINAL_GAPS["local"]),
    "local-bwrap": Target(_local_bwrap, not_applicable=NO_EGRESS, known_gaps=_TERMINAL_GAPS["local-bwrap"]),
    "docker": Target(_docker),
    "ssh": Target(_ssh, not_applicable=NO_EGRESS, known_gaps=_TERMINAL_GAPS["ssh"]),
    # a native exec and nothing else: neither background processes nor sessions, no helper channel
    "fake": Target(
        _fake,
        not_applicable=NO_CHANNEL
        | NO_PORTS
        | NO_PTY
        | checks_named("background_process")
        | NO_PAUSE
        | NO_EGRESS
        | NO_SNAPSHOT,
    ),
    "e2b": Target(_e2b, faked=True, known_gaps=FAKE_EGRESS),
    "modal": Target(_modal, faked=True, sdk_garbage=True, known_gaps=FAKE_EGRESS),
    "daytona": Target(
        _daytona,
        faked=True,
        not_applicable=NO_CHANNEL,
        known_gaps={
            "no_bound_env_value_is_in_a_snapshot": "Daytona binds no env after start (bind_env refuses)",
            "stream_delivers_output_while_running": f"Daytona's process.{_NOT_STREAMED}",
            "stdin_streams_while_running": f"Daytona's process.{_WHOLE_STDIN}",
            **FAKE_EGRESS,
        },
    ),
    "flyio": Target(
        _flyio,
        faked=True,
        not_applicable=NO_CHANNEL | NO_PORTS | NO_PAUSE | NO_PTY | NO_EGRESS | NO_SNAPSHOT,
        known_gaps={
            "stream_delivers_output_while_running": f"Fly's {_NOT_STREAMED}",
            "stdin_streams_while_running": f"Fly's {_WHOLE_STDIN}",
        },
    ),
    "tenki": Target(
        _tenki,
        faked=True,
        not_applicable=NO_CHANNEL | NO_PORTS | NO_PTY | NO_SNAPSHOT,
        known_gaps=FAKE_EGRESS,
    ),
    "kubernetes": Target(
        _kubernetes,
        faked=True,
        known_gaps={
            name: "the fake enforces a policy's egress to pods (the host-name proxy), not to IP blocks"
            for name in NO_EGRESS
        },
    ),
}

#: The registered providers the tests serve through a vendor's wire fake.
CLOUDS = tuple(name for name in registered() if name in TARGETS and TARGETS[name].faked)
