"""A local tree into an instance and its changes back out (``praisonai.compute.workspace``), for
real on local, docker and ssh: .gitignore honoured (by git in a work tree, by pathspec
elsewhere), links sent as links and never followed out of the tree, the baseline diff and the
download of what changed."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kit import provider_named

from praisonai import Sandbox
from praisonai._errors import ConfigError
from praisonai.compute.workspace import BASELINE_DIR, Change, from_keywords

SECRET = "host-secret-7f3a"


@pytest.fixture(params=["local", "docker", "ssh"])
def sandbox(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    with Sandbox.create(provider_named(request.param, request), environment=False) as sb:
        yield sb


def make_tree(root: Path, outside: Path) -> Path:
    """A tree with ignored files at two levels, a negation, and links in and out of it."""
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    tree = root / "tree"
    (tree / "pkg" / "build").mkdir(parents=True)
    (tree / ".gitignore").write_text("*.log\nbuild/\n!keep.log\n")
    (tree / "pkg" / ".gitignore").write_text("local.cfg\n")
    (tree / "main.py").write_text("print('hi')\n")
    (tree / "run.sh").write_text("#!/bin/sh\necho ran\n")
    (tree / "run.sh").chmod(0o755)
    (tree / "debug.log").write_text("noise")
    (tree / "keep.log").write_text("kept")
    (tree / "pkg" / "mod.py").write_text("X = 1\n")
    (tree / "pkg" / "local.cfg").write_text("ignored below")
    (tree / "pkg" / "build" / "out.o").write_text("ignored dir")
    (tree / "inside").symlink_to("main.py")
    (tree / "escape").symlink_to(outside / "secret.txt")
    (tree / "escape_dir").symlink_to(outside)
    return tree


def test_upload_honours_gitignore_and_never_follows_links_out(sandbox: Sandbox, tmp_path: Path) -> None:
    tree = make_tree(tmp_path, tmp_path / "outside")
    packed = sandbox.upload_workspace(tree)
    assert (packed.files, packed.links) == (6, 3)  # .gitignore x2, main, run.sh, keep.log, mod.py
    listing = sandbox.exec("find . -path ./" + BASELINE_DIR + " -prune -o -print | sort").stdout.split()
    assert listing == [
        ".", "./.gitignore", "./escape", "./escape_dir", "./inside", "./keep.log", "./main.py",
        "./pkg", "./pkg/.gitignore", "./pkg/mod.py", "./run.sh",
    ]  # fmt: skip
    links = sandbox.exec("readlink escape escape_dir inside").stdout.split()
    assert links == [str(tmp_path / "outside" / "secret.txt"), str(tmp_path / "outside"), "main.py"]
    assert sandbox.exec("test -L escape && test -L escape_dir && ./run.sh").stdout == "ran\n"
    assert sandbox.exec("cat inside").stdout == "print('hi')\n"
    if sandbox.provider.provider_name == "docker":  # elsewhere the host's own path is the same file
        assert SECRET not in sandbox.exec(f"grep -rs {SECRET} / --exclude-dir=proc || true").stdout


def test_a_git_work_tree_is_listed_by_git_and_keeps_its_history(sandbox: Sandbox, tmp_path: Path) -> None:
    tree = make_tree(tmp_path, tmp_path / "outside")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q", str(tree)], check=True)
    subprocess.run([*git, "-C", str(tree), "add", "main.py", ".gitignore"], check=True)
    subprocess.run([*git, "-C", str(tree), "commit", "-qm", "first"], check=True)
    (tree / "notes.txt").write_text("mine")
    (tree / ".git" / "info" / "exclude").write_text("notes.txt\n")  # git's own rules, not only .gitignore
    sandbox.upload_workspace(tree)
    assert not sandbox.exec("test -e notes.txt").ok and sandbox.exec("test -f pkg/mod.py").ok
    assert not sandbox.exec("test -e debug.log").ok and sandbox.exec("test -L escape").ok
    git_here = "git -c safe.directory='*'"
    said = sandbox.exec(f"{git_here} log --format=%s && {git_here} status --short")
    assert said.stdout.splitlines()[0] == "first" and BASELINE_DIR not in said.stdout


def test_the_diff_and_the_download_of_changes(sandbox: Sandbox, tmp_path: Path) -> None:
    tree = make_tree(tmp_path, tmp_path / "outside")
    sandbox.upload_workspace(tree)
    assert sandbox.diff() == ""
    sandbox.write_file("main.py", "print('fixed')\n")
    sandbox.write_file("pkg/new.py", "Y = 2\n")
    sandbox.write_file("noise.log", "ignored, as at upload")
    sandbox.exec("rm pkg/mod.py", check=True)
    patch = sandbox.diff()
    assert "-print('hi')\n+print('fixed')\n" in patch and "+++ b/pkg/new.py" in patch
    assert "deleted file mode" in patch and "noise.log" not in patch
    changes = sandbox.download_changes(tmp_path / "out")
    assert set(changes) == {
        Change("main.py", "modified"),
        Change("pkg/new.py", "added"),
        Change("pkg/mod.py", "deleted"),
    }
    assert (tmp_path / "out" / "main.py").read_text() == "print('fixed')\n"
    assert (tmp_path / "out" / "pkg" / "new.py").read_text() == "Y = 2\n"
    assert not (tmp_path / "out" / "pkg" / "mod.py").exists()
    assert (tree / "main.py").read_text() == "print('hi')\n"  # the user's tree is never touched
    subprocess.run(["git", "apply", "--check", "-"], input=patch.encode(), cwd=tree, check=True)


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ({"workspace": "/no/such/dir"}, "the workspace /no/such/dir does not exist"),
        ({"workspace": "/etc/hostname"}, "is not a directory"),
        ({"repo": "ftp://host/x"}, "is not a git repository URL"),
        ({"repo": "https://user:tok@host/x"}, "carries a password; put the token in an environment variable"),
        ({"repo": "https://host/x@-oops"}, "is not a git branch, tag or commit name"),
        ({"repo": "https://host/x", "repo_token_env": "PRAISONAI_TEST_UNSET"}, "is not set"),
        ({"repo": "https://host/x", "workspace": "."}, "give workspace or repo, not both"),
        ({"repo_token_env": "T"}, "give repo too"),
    ],
)
def test_bad_input_is_one_sentence(arguments: dict[str, str], said: str) -> None:
    keywords = {"workspace": None, "repo": None, "repo_token_env": None, **arguments}
    with pytest.raises(ConfigError, match=said) as caught:
        from_keywords(keywords["workspace"], keywords["repo"], keywords["repo_token_env"])
    assert "\n" not in str(caught.value) and "tok" not in str(caught.value).replace("token", "")


UPLOAD_AND_MEASURE = """
import sys, threading, time
from praisonai import Sandbox

def rss_mib():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS")) // 1024

with Sandbox.create("docker", environment=False) as sb:
    before, peak, done = rss_mib(), [0], threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], rss_mib())
            time.sleep(0.005)

    sampler = threading.Thread(target=sample)
    sampler.start()
    sb.upload_workspace(sys.argv[1])
    done.set()
    sampler.join()
    print(sb.exec("du -sm --exclude=" + sys.argv[2] + " . | cut -f1").stdout.strip(), peak[0] - before)
"""


def test_a_large_upload_is_streamed(docker_ok: None, home: Path, tmp_path: Path) -> None:
    """200 MiB (sparse files: cheap to make, read as real bytes) goes through a process whose
    memory grows far less than the tree's size while it uploads (sampled every 5 ms: the
    process's own peak also counts what provisioning costs, which depends on the engine's
    state; 236 MiB before the upload was streamed)."""
    tree = tmp_path / "big"
    tree.mkdir()
    for i in range(20):
        with (tree / f"part{i:02d}.bin").open("wb") as part:
            part.truncate(10 << 20)
    child = subprocess.run(
        [sys.executable, "-c", UPLOAD_AND_MEASURE, str(tree), BASELINE_DIR],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    uploaded_mib, grown_mib = map(int, child.stdout.split())
    assert uploaded_mib >= 200
    assert grown_mib < 40, f"uploading 200 MiB grew the process by {grown_mib} MiB"
