"""Docker-specific promises: hardening, labels, network, errors for a missing image or daemon."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import anyio
import pytest

from praisonai import _portal
from praisonai._errors import ImageNotFoundError, ProviderUnavailableError
from praisonai.compute.providers.docker import DockerCompute, container_name

pytestmark = pytest.mark.usefixtures("docker_ok")


@pytest.fixture
def provider() -> DockerCompute:
    return DockerCompute()


@pytest.fixture
def make(provider: DockerCompute) -> Iterator[object]:
    made: list[str] = []

    def provision(**config: object) -> str:
        instance_id = _portal.call(provider.provision, config).instance_id
        made.append(instance_id)
        return instance_id

    yield provision
    for instance_id in made:
        _portal.call(provider.shutdown, instance_id)


def _inspect(instance_id: str) -> dict:
    return DockerCompute().api.inspect_container(container_name(instance_id))


def test_container_is_hardened_and_labelled(make, provider: DockerCompute) -> None:
    instance_id = make(env={"API_TOKEN": "s3cret"}, cpu=0.5, memory_mb=256)
    attrs = _inspect(instance_id)
    host = attrs["HostConfig"]
    assert host["Init"] is True
    assert host["CapDrop"] == ["ALL"] and "SYS_ADMIN" not in host["CapAdd"]
    assert "no-new-privileges:true" in host["SecurityOpt"]
    assert host["PidsLimit"] > 0 and host["NanoCpus"] == 500_000_000
    assert host["Memory"] == 256 * 1024 * 1024
    labels = attrs["Config"]["Labels"]
    for key in ("instance", "owner", "definition", "created", "provider"):
        assert f"praisonai.{key}" in labels
    assert labels["praisonai.instance"] == instance_id
    # env travels through the API, never on a command line
    assert "s3cret" not in " ".join([attrs["Path"], *attrs["Args"]])
    assert "s3cret" not in labels["praisonai.definition"]
    # nor in the container's config (a commit would record it): the helper binds it
    assert "s3cret" not in str(attrs["Config"]["Env"])
    assert _portal.call(provider.execute, instance_id, 'echo "$API_TOKEN"').stdout == "s3cret\n"


def test_network_none_leaves_only_loopback(make, provider: DockerCompute) -> None:
    instance_id = make(network="none")
    out = _portal.call(provider.execute, instance_id, "cat /proc/net/dev").stdout
    interfaces = {line.split(":")[0].strip() for line in out.splitlines()[2:]}
    assert interfaces == {"lo"}


def test_missing_image_is_a_clear_error(provider: DockerCompute) -> None:
    with pytest.raises(ImageNotFoundError, match="build-offline"):
        _portal.call(provider.provision, {"image": "praisonai-no-such-image:1"})
    left = DockerCompute().api.containers(all=True, filters={"ancestor": "praisonai-no-such-image:1"})
    assert left == []


def test_daemon_down_is_a_clear_error() -> None:
    down = DockerCompute(base_url="unix:///nonexistent/docker.sock")
    assert "does not answer" in (down.unavailable_reason() or "")
    with pytest.raises(ProviderUnavailableError):
        _portal.call(down.provision)


def test_timeout_kills_a_process_that_left_its_session(make, provider: DockerCompute) -> None:
    instance_id = make()
    r = _portal.call(lambda: provider.execute(instance_id, "setsid sleep 301 & sleep 301", timeout=1))
    assert r.timed_out
    left = _portal.call(provider.execute, instance_id, "grep -l '[s]leep 301' /proc/[0-9]*/cmdline; true")
    assert left.stdout == ""


def test_a_stop_during_a_removal_in_progress_answers_once_it_is_gone(make, provider: DockerCompute) -> None:
    """Another remover (the engine's auto_remove, a second stop) got there first: the engine
    answers 409 at once, yet the stop must not answer until the container is gone."""
    instance_id = make()
    # 60,000 files: the first removal takes a few hundred milliseconds, long enough to overlap
    _portal.call(provider.execute, instance_id, "mkdir many && cd many && seq 60000 | xargs touch", 120)
    api, name = provider.api, container_name(instance_id)
    removal = {"force": True, "v": True}  # as the engine's auto_remove: its spool volume too
    first = threading.Thread(target=api.remove_container, args=(name,), kwargs=removal)
    first.start()
    try:
        while api.inspect_container(name)["State"]["Status"] != "removing":  # gone: NotFound fails it
            time.sleep(0.005)
        assert _portal.call(provider.shutdown, instance_id) is True
        assert api.containers(all=True, filters={"name": name}) == []
    finally:
        first.join(60)


def test_a_streamed_stdin_the_command_does_not_read_yet_is_held_back(make, provider: DockerCompute) -> None:
    """As a pipe would: a few chunks ahead at most wait in the instance, not the whole stream."""
    instance_id = make()
    chunk, count, waiting = b"x" * (64 << 10), 40, []

    async def chunks():
        for _ in range(count):
            yield chunk

    async def run() -> str:
        async with anyio.create_task_group() as tasks:

            async def watch() -> None:
                await anyio.sleep(1.5)  # the command sleeps 3 s before it reads
                spooled = "ls /tmp/.praisonai/x/*.i | grep -c '^[0-9]'"  # root's: commands cannot list it
                listed = await provider.execute(instance_id, spooled, privileged=True)
                waiting.append(int(listed.stdout.strip() or 0))

            tasks.start_soon(watch)
            result = await provider.execute(instance_id, "sleep 3; wc -c", stdin=chunks(), timeout=60)
        return result.stdout.strip()

    assert _portal.call(run) == str(count * len(chunk))
    assert 0 < waiting[0] <= 8, f"{waiting[0]} chunks waited in the instance"


def test_the_spool_is_on_a_volume_of_its_own_and_gc_removes_one_left_behind(
    make, provider: DockerCompute
) -> None:
    """The helper's spool (the commands' outputs, the bound env) is on a volume, which no commit
    takes; a removal without its volumes (``docker rm -f``) leaves it, and the next gc or ps
    removes it (an instance that pauses is not removed by the engine on its own, which would)."""
    import docker

    instance_id = make(idle_action="pause")
    mounts = _inspect(instance_id)["Mounts"]
    (spool,) = [m["Name"] for m in mounts if m["Destination"] == "/tmp/.praisonai" and m["Type"] == "volume"]
    provider.api.remove_container(container_name(instance_id), force=True)  # not its volumes
    assert provider.api.inspect_volume(spool)["Labels"]["praisonai.spool"] == "1"
    assert instance_id not in [i.instance_id for i in provider.listing()]
    with pytest.raises(docker.errors.NotFound):
        provider.api.inspect_volume(spool)


def test_listings_at_once_all_answer_though_the_engine_prunes_one_at_a_time(provider: DockerCompute) -> None:
    """Each listing sweeps this home's left spool volumes with a prune, and the engine refuses a
    second prune while one runs (409): a pool placing instances lists its engines at once, and
    each listing must still answer (the prune running sweeps ours too)."""
    answers: list[object] = []

    def list_once() -> None:
        try:
            answers.append(len(DockerCompute().listing()))
        except Exception as exc:  # kept to be shown by the assertion below
            answers.append(exc)

    threads = [threading.Thread(target=list_once) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(answers) == 8 and all(isinstance(a, int) for a in answers), answers
