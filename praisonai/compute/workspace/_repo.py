"""``URL[@REF]`` for a repository cloned inside the instance, and the clone itself, whose token
(read from a variable of this process) reaches git only through the environment of the clone:
never a command line, a URL, ``.git/config``, the output, an error or the store."""

from __future__ import annotations

import os
import re
import urllib.parse
from dataclasses import dataclass

from praisonai._errors import ConfigError

#: The variable the instance's git reads the token from (bound for the clone alone).
TOKEN_VARIABLE = "PRAISONAI_GIT_TOKEN"
#: A credential helper that answers git's ``get`` from that variable: config given with ``-c``
#: before the subcommand lives for this command only (``clone`` writes none of it).
_HELPER = (
    '!f() { test "$1" = get || exit 0; echo username=x-access-token; '
    f'echo "password=${TOKEN_VARIABLE}"; }}; f'
)
_SCHEMES = ("https", "http", "ssh", "git", "file")
_SCP = re.compile(r"^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^/].*|^[A-Za-z0-9.-]+:[^/].*")
_REF = re.compile(r"^[A-Za-z0-9._/+-]+$")
_VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class RepoSpec:
    """A repository to clone: its URL, the ref to check out (``None``: the default branch) and
    the name of the variable holding its token (``None``: no token)."""

    url: str
    ref: str | None = None
    token_env: str | None = None

    def token(self) -> str | None:
        """The token's value, read now (``ConfigError``: the variable is not set)."""
        if self.token_env is None:
            return None
        value = os.environ.get(self.token_env)
        if not value:
            raise ConfigError(
                f"the repository token variable {self.token_env} is not set; export it or drop the token",
                op="repo",
            )
        return value


def parse_repo(text: str, *, ref: str | None = None, token_env: str | None = None) -> RepoSpec:
    """``URL[@REF]`` (or ``ref`` given apart) as a checked :class:`RepoSpec`; ``ConfigError``
    (one sentence) for a URL git would not clone or one that carries a password."""
    text = text.strip()
    cut = _path_start(text)
    at = text.rfind("@", cut)
    if at > cut and ref is None:
        text, ref = text[:at], text[at + 1 :]
    _check_url(text)
    if ref is not None and (not _REF.match(ref) or ref.startswith("-") or ".." in ref):
        raise ConfigError(f"{ref!r} is not a git branch, tag or commit name; give one after @", op="repo")
    if token_env is not None and not _VARIABLE.match(token_env):
        raise ConfigError(f"{token_env!r} is not an environment variable name", op="repo")
    return RepoSpec(text, ref or None, token_env)


def _path_start(text: str) -> int:
    """Where the repository's path begins (an ``@`` after it separates the ref)."""
    if "://" in text:
        host = text.index("://") + 3
        slash = text.find("/", host)
        return slash if slash >= 0 else len(text)
    colon = text.find(":")
    return colon if _SCP.match(text) else 0


def _check_url(url: str) -> None:
    bad = not url or url.startswith("-") or any(c.isspace() or ord(c) < 32 for c in url)
    if "://" in url:
        parts = urllib.parse.urlsplit(url)
        bad = bad or parts.scheme not in _SCHEMES or (parts.scheme != "file" and not parts.hostname)
        if parts.password:
            raise ConfigError(
                f"the repository URL for {parts.hostname} carries a password; put the token in an "
                "environment variable and name it with repo_token_env (--repo-token-env)",
                op="repo",
            )
    elif not (url.startswith("/") or _SCP.match(url)):
        bad = True
    if bad:
        raise ConfigError(
            f"{url!r} is not a git repository URL; give https://host/owner/repo[@ref], "
            "git@host:owner/repo[@ref] or an absolute path in the instance",
            op="repo",
        )


def clone_argv(spec: RepoSpec, dest: str) -> list[str]:
    """The clone's command line (no secret in it): with a ref, no checkout yet."""
    helper = ["-c", "credential.helper=", "-c", f"credential.helper={_HELPER}"] if spec.token_env else []
    fetch = ["--no-checkout"] if spec.ref else []
    return ["git", *helper, "-c", "core.askPass=", "clone", "--quiet", *fetch, "--", spec.url, dest]


def checkout_argv(spec: RepoSpec, dest: str) -> list[str]:
    assert spec.ref is not None
    return ["git", "-C", dest, "checkout", "--quiet", spec.ref]


def clone_env(spec: RepoSpec) -> dict[str, str]:
    """The clone's environment: never a prompt; the token under :data:`TOKEN_VARIABLE`."""
    env = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "SSH_ASKPASS": ""}
    token = spec.token()
    if token is not None:
        env[TOKEN_VARIABLE] = token
    return env


def scrubbed(text: str, spec: RepoSpec) -> str:
    """``text`` (git's message) with the token, should git ever echo it, replaced."""
    token = os.environ.get(spec.token_env or "") if spec.token_env else None
    return text.replace(token, "***") if token else text
