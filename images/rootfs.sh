# shellcheck shell=bash
# Sourced by images/build-offline.sh and images/build-proxy.sh: build an image without a container
# registry, by debootstrapping a minimal Debian root file system from Debian's package mirror and
# `docker import`ing it.
#
# usage: import_rootfs IMAGE PACKAGES [--change INSTRUCTION]...
#        (PRAISONAI_IMAGE_SUITE: the Debian suite, default bookworm; PRAISONAI_DEBIAN_MIRROR: a mirror)

import_rootfs() {
    local image="$1" packages="$2"
    shift 2
    local suite="${PRAISONAI_IMAGE_SUITE:-bookworm}"
    local mirror="${PRAISONAI_DEBIAN_MIRROR:-}"   # empty: debootstrap's default Debian mirror

    command -v debootstrap >/dev/null || { echo "debootstrap is missing: apt-get install debootstrap" >&2; return 1; }
    docker info >/dev/null 2>&1 || { echo "no Docker engine answers: start dockerd first" >&2; return 1; }

    local root
    root="$(mktemp -d /tmp/praisonai-rootfs.XXXXXX)"
    # shellcheck disable=SC2064  # expand now: $root is local to this function
    trap "rm -rf '$root'" EXIT

    debootstrap --variant=minbase --include="$packages" "$suite" "$root" ${mirror:+"$mirror"} >/dev/null
    # Keep the image small and deterministic: no apt lists or caches, no docs.
    rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/usr/share/doc/* "$root"/usr/share/man/*
    mkdir -p "$root/workspace"
    # the caller's own additions to the tree (a function it defined), before it is imported
    if declare -F prepare_rootfs >/dev/null; then prepare_rootfs "$root"; fi

    tar -C "$root" -c . | docker import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV LANG=C.UTF-8' \
        "$@" - "$image" >/dev/null
    echo "built $image"
}
