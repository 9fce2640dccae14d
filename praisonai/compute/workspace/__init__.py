"""A workspace in the instance: a local tree uploaded (``.gitignore`` honoured, streamed) or a
repository cloned (its token kept out of every command line and record), a baseline recorded at
that moment, and the changes since shown as a ``git diff`` or copied back out."""

from praisonai.compute.workspace._baseline import BASELINE_DIR
from praisonai.compute.workspace._ops import (
    Change,
    Place,
    changes,
    checked_tree,
    clone,
    diff,
    download_changes,
    record_baseline,
    upload_tree,
)
from praisonai.compute.workspace._pack import Packed
from praisonai.compute.workspace._repo import RepoSpec, parse_repo
from praisonai.compute.workspace._resources import (
    Checkout,
    GitRepository,
    LocalDirectory,
    Resource,
    from_keywords,
    prepare,
    resources,
)

__all__ = [
    "BASELINE_DIR",
    "Change",
    "Checkout",
    "GitRepository",
    "LocalDirectory",
    "Packed",
    "Place",
    "RepoSpec",
    "Resource",
    "changes",
    "checked_tree",
    "clone",
    "diff",
    "download_changes",
    "from_keywords",
    "parse_repo",
    "prepare",
    "record_baseline",
    "resources",
    "upload_tree",
]
