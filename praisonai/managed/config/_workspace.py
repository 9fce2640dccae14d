"""A managed agent's ``workspace=``/``repo=``/``repo_token_env=``: its config's ``resources``."""

from __future__ import annotations

import os

from praisonai._errors import ConfigError
from praisonai.compute.workspace import Resource, from_keywords
from praisonai.managed.config._local import LocalManagedConfig


def with_workspace(
    config: LocalManagedConfig,
    hosted: bool,
    workspace: str | os.PathLike[str] | None,
    repo: str | None,
    repo_token_env: str | None,
) -> LocalManagedConfig:
    """``config`` with the keywords added to its resources (checked now: a bad path, URL or
    ref name is said before any instance or model is used)."""
    added = from_keywords(workspace, repo, repo_token_env)
    if not added:
        return config
    if hosted:
        raise ConfigError(
            "workspace= and repo= fill an instance of ours; with provider='anthropic' give the "
            "session's resources in ManagedConfig(resources=[...])",
            op="workspace",
        )
    return config.replace(resources=(*config.resources, *added))


def instance_resources(config: LocalManagedConfig, hosted: bool) -> tuple[Resource, ...]:
    """What goes in each instance of ours (a hosted config's resources are the API's)."""
    return () if hosted else config.resources
