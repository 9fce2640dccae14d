"""Session resources, named as Claude Managed Agents names them: a ``github_repository`` (any git
URL here) cloned into the instance, and a ``local_directory`` (ours: a tree on this machine)
uploaded into it. Each is checked when it is given, before an instance or a model is used."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from praisonai._errors import ConfigError
from praisonai.compute.workspace._ops import Place, checked_tree, clone, upload_tree
from praisonai.compute.workspace._repo import RepoSpec, parse_repo


class Checkout(BaseModel):
    """``{type: branch, name}`` or ``{type: commit, sha}`` (a tag goes as a branch name)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    type: Literal["branch", "commit"]
    name: str | None = None
    sha: str | None = None

    @property
    def ref(self) -> str:
        ref = self.name if self.type == "branch" else self.sha
        if not ref:
            raise ValueError(f"a {self.type} checkout needs its {'name' if self.type == 'branch' else 'sha'}")
        return ref


class GitRepository(BaseModel):
    """A repository cloned in the instance. ``authorization_token_env`` names the variable of
    this process holding its token (the API's ``authorization_token`` value is never taken:
    a record of the config would keep it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    type: Literal["github_repository"] = "github_repository"
    url: str
    checkout: Checkout | None = None
    mount_path: str | None = None
    authorization_token_env: str | None = None

    @model_validator(mode="after")
    def _checked(self) -> GitRepository:
        self.spec()
        return self

    def spec(self) -> RepoSpec:
        ref = self.checkout.ref if self.checkout is not None else None
        return parse_repo(self.url, ref=ref, token_env=self.authorization_token_env)


class LocalDirectory(BaseModel):
    """A tree on this machine uploaded into the instance (``.gitignore`` honoured). The path is
    checked when the upload is made (before any model request), not when a stored config is
    read back: a session resumed after the tree moved still reattaches its instance."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    type: Literal["local_directory"] = "local_directory"
    path: str
    mount_path: str | None = None


Resource = Annotated[GitRepository | LocalDirectory, Field(discriminator="type")]
_RESOURCES: TypeAdapter[list[Resource]] = TypeAdapter(list[Resource])


def resources(given: Iterable[Mapping[str, Any] | Resource] | None) -> tuple[Resource, ...]:
    """The checked resources (``ConfigError``, one sentence, for the first bad one)."""
    items = [r.model_dump() if isinstance(r, BaseModel) else dict(r) for r in given or ()]
    try:
        return tuple(_RESOURCES.validate_python(items))
    except ValidationError as exc:
        error = exc.errors()[0]
        cause = error.get("ctx", {}).get("error")
        said = str(cause) if isinstance(cause, ConfigError | ValueError) else error["msg"]
        raise ConfigError(f"resources: {said}", op="resources") from None


def from_keywords(
    workspace: str | os.PathLike[str] | None, repo: str | None, repo_token_env: str | None
) -> tuple[Resource, ...]:
    """``workspace=``/``repo=``/``repo_token_env=`` (or the CLI's flags) as resources."""
    if workspace is not None and repo is not None:
        raise ConfigError("give workspace or repo, not both: both would fill the working dir", op="workspace")
    if repo_token_env is not None and repo is None:
        raise ConfigError("repo_token_env names the token of a repo; give repo too", op="repo")
    if workspace is not None:
        return (LocalDirectory(path=os.fspath(checked_tree(workspace))),)
    if repo is not None:
        spec = parse_repo(repo, token_env=repo_token_env)
        spec.token()  # an unset variable is said now, before anything is made
        checkout = None if spec.ref is None else Checkout(type="branch", name=spec.ref)
        return (GitRepository(url=spec.url, checkout=checkout, authorization_token_env=spec.token_env),)
    return ()


async def prepare(at: Place, given: Iterable[Resource]) -> None:
    """Put each resource in the instance: upload the directory, or clone the repository."""
    for resource in given:
        if isinstance(resource, LocalDirectory):
            await upload_tree(at, resource.path, resource.mount_path)
        else:
            await clone(at, resource.spec(), resource.mount_path)
