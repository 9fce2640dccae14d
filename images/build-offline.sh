#!/usr/bin/env bash
# Build the default sandbox image without a container registry: debootstrap a Debian bookworm
# root file system from Debian's package mirror and `docker import` it. The result is equivalent
# to images/Dockerfile (Debian + python3 + common CLI tools) for machines that cannot pull.
#
# usage: images/build-offline.sh [IMAGE_NAME]      (default: praisonai-sandbox:latest; needs root,
#        debootstrap and a running Docker engine; about a minute)
set -euo pipefail

image="${1:-praisonai-sandbox:latest}"
suite="${PRAISONAI_IMAGE_SUITE:-bookworm}"
mirror="${PRAISONAI_DEBIAN_MIRROR:-}"   # empty: debootstrap's default Debian mirror
packages="python3,python3-pip,procps,ca-certificates,git,curl,less,xz-utils,bzip2,unzip,file"
# Bump with every change to what the image holds: .ci/run rebuilds an image of an older revision.
revision=2

command -v debootstrap >/dev/null || { echo "debootstrap is missing: apt-get install debootstrap" >&2; exit 1; }
docker info >/dev/null 2>&1 || { echo "no Docker engine answers: start dockerd first" >&2; exit 1; }

root="$(mktemp -d /tmp/praisonai-rootfs.XXXXXX)"
trap 'rm -rf "$root"' EXIT

debootstrap --variant=minbase --include="$packages" "$suite" "$root" ${mirror:+"$mirror"} >/dev/null
# Keep the image small and deterministic: no apt lists or caches, no docs.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/usr/share/doc/* "$root"/usr/share/man/*
mkdir -p "$root/workspace"

tar -C "$root" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'WORKDIR /workspace' \
    --change 'CMD ["sleep", "infinity"]' \
    --change 'LABEL org.opencontainers.image.title=praisonai-sandbox' \
    --change "LABEL praisonai.image.revision=$revision" \
    - "$image" >/dev/null
echo "built $image"
