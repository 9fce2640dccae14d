#!/usr/bin/env bash
# Build the egress proxy image for docker's `network: {allow: [...]}` mode without a container
# registry, as images/build-offline.sh builds the sandbox image: debootstrap a minimal Debian
# bookworm with tinyproxy from Debian's packages and `docker import` it. The provider writes the
# proxy's configuration into each proxy container when it creates it (the instance cannot reach it).
#
# usage: images/build-proxy.sh [IMAGE_NAME]      (default: praisonai-egress-proxy:latest; needs
#        root, debootstrap and a running Docker engine; under a minute)
set -euo pipefail

image="${1:-praisonai-egress-proxy:latest}"
suite="${PRAISONAI_IMAGE_SUITE:-bookworm}"
mirror="${PRAISONAI_DEBIAN_MIRROR:-}"   # empty: debootstrap's default Debian mirror
packages="tinyproxy"
# Bump with every change to what the image holds: .ci/run rebuilds an image of an older revision.
revision=1

command -v debootstrap >/dev/null || { echo "debootstrap is missing: apt-get install debootstrap" >&2; exit 1; }
docker info >/dev/null 2>&1 || { echo "no Docker engine answers: start dockerd first" >&2; exit 1; }

root="$(mktemp -d /tmp/praisonai-proxyfs.XXXXXX)"
trap 'rm -rf "$root"' EXIT

debootstrap --variant=minbase --include="$packages" "$suite" "$root" ${mirror:+"$mirror"} >/dev/null
# Keep the image small and deterministic: no apt lists or caches, no docs.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/usr/share/doc/* "$root"/usr/share/man/*

tar -C "$root" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["tinyproxy", "-d", "-c", "/etc/tinyproxy/tinyproxy.conf"]' \
    --change 'LABEL org.opencontainers.image.title=praisonai-egress-proxy' \
    --change "LABEL praisonai.image.revision=$revision" \
    - "$image" >/dev/null
echo "built $image"
