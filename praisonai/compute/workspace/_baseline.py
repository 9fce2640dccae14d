"""The workspace's starting point, kept so its changes can be shown and taken out later.

At upload or clone time a git repository of our own, in ``.praisonai-baseline.git`` inside the
working dir (its work tree the working dir, so the user's tree and any ``.git`` in it are left
alone), commits what the workspace holds. The diff stages the working dir in a scratch index of
that repository and compares it with the commit: edits, new files and deletions, ``.gitignore``
honoured. Scripts run inside the instance; paths are passed as arguments, never spliced in."""

from __future__ import annotations

#: The baseline repository's name inside the working dir (excluded from itself and from ``.git``).
BASELINE_DIR = ".praisonai-baseline.git"

_ENV = (
    f'B="$PWD/{BASELINE_DIR}"; export GIT_DIR="$B" GIT_WORK_TREE="$PWD" GIT_CONFIG_NOSYSTEM=1 '
    "GIT_CONFIG_GLOBAL=/dev/null GIT_TERMINAL_PROMPT=0; "
)
_NO_GIT = "git is not installed in the instance, so no baseline was recorded to compare with"
_GIT = "git -c safe.directory='*' -c core.quotePath=false"

#: Record the baseline (run in the working dir).
RECORD = (
    _ENV
    + "command -v git >/dev/null 2>&1 || exit 0; "  # the files arrive; diff says why it cannot
    + f'[ -d "$B" ] && exit 0; {_GIT} init --quiet >/dev/null && '
    + f'printf "/%s/\\n" "{BASELINE_DIR}" >>"$B/info/exclude" && '
    + f'{{ [ ! -d .git/info ] || printf "/%s/\\n" "{BASELINE_DIR}" >>.git/info/exclude; }} && '
    # a repository's own objects serve as the baseline's where they are the same (a clone's files
    # are stored once); the rest is stored uncompressed: zlib was 3/4 of a 200 MiB upload's time
    + '{ [ ! -d .git/objects ] || echo "$PWD/.git/objects" >"$B/objects/info/alternates"; } && '
    + f"{_GIT} config core.looseCompression 0 && "
    + f"{_GIT} add -A && {_GIT} -c user.name=praisonai -c user.email=praisonai@invalid "
    + "commit --quiet --no-verify --allow-empty -m baseline >/dev/null"
)

_STAGE = (
    _ENV
    + f'command -v git >/dev/null 2>&1 || {{ echo "{_NO_GIT}" >&2; exit 127; }}; '
    + '[ -d "$B" ] || { echo "the workspace has no baseline (nothing was uploaded or cloned)" >&2; '
    + "exit 3; }; "
    + f'export GIT_INDEX_FILE="$B/praisonai-diff-index"; {_GIT} read-tree HEAD && {_GIT} add -A && '
)
#: The changes since the baseline as a patch (binary files included).
DIFF = _STAGE + f"{_GIT} diff --cached --binary --no-color --no-ext-diff --no-renames HEAD"
#: The changed paths: ``STATUS\\0PATH\\0`` pairs (A added, M modified, D deleted, T type changed).
NAMES = _STAGE + f"{_GIT} diff --cached --name-status --no-renames -z HEAD"
