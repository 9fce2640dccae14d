#!/usr/bin/env bash
# Build the default sandbox image without a container registry (images/rootfs.sh: debootstrap a
# Debian bookworm root file system from Debian's package mirror and `docker import` it). The
# result is equivalent to images/Dockerfile (Debian + python3 + common CLI tools) for machines
# that cannot pull.
#
# usage: images/build-offline.sh [IMAGE_NAME]      (default: praisonai-sandbox:latest; needs root,
#        debootstrap and a running Docker engine; about a minute)
set -euo pipefail

packages="python3,python3-pip,procps,ca-certificates,git,curl,less,xz-utils,bzip2,unzip,file"
# Bump with every change to what the image holds: .ci/run rebuilds an image of an older revision.
revision=3

# The account commands run as (uid 1000, E2B's `user`), apart from the exec helper's root; the
# workspace is its.
prepare_rootfs() {
    chroot "$1" useradd --uid 1000 --user-group --create-home --shell /bin/bash user
    chroot "$1" chown user:user /workspace
}

# shellcheck source=images/rootfs.sh
. "$(dirname "$0")/rootfs.sh"
import_rootfs "${1:-praisonai-sandbox:latest}" "$packages" \
    --change 'WORKDIR /workspace' \
    --change 'CMD ["sleep", "infinity"]' \
    --change 'LABEL org.opencontainers.image.title=praisonai-sandbox' \
    --change "LABEL praisonai.image.revision=$revision"
