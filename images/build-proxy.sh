#!/usr/bin/env bash
# Build the egress proxy image without a container registry, the way images/build-offline.sh
# builds the sandbox image: debootstrap a Debian minbase root with tinyproxy and `docker import`
# it. The image holds no configuration: the allowlist (tinyproxy's FilterDefaultDeny filter) is
# given to each proxy container when it starts.
#
# usage: images/build-proxy.sh [IMAGE_NAME]      (default: praisonai-egress-proxy:latest; needs
#        root, debootstrap and a running Docker engine; under a minute)
set -euo pipefail

image="${1:-praisonai-egress-proxy:latest}"
suite="${PRAISONAI_IMAGE_SUITE:-bookworm}"
mirror="${PRAISONAI_DEBIAN_MIRROR:-}"   # empty: debootstrap's default Debian mirror
# Bump with every change to what the image holds: .ci/run rebuilds an image of an older revision.
revision=1

command -v debootstrap >/dev/null || { echo "debootstrap is missing: apt-get install debootstrap" >&2; exit 1; }
docker info >/dev/null 2>&1 || { echo "no Docker engine answers: start dockerd first" >&2; exit 1; }

root="$(mktemp -d /tmp/praisonai-proxyfs.XXXXXX)"
trap 'rm -rf "$root"' EXIT

debootstrap --variant=minbase --include=tinyproxy "$suite" "$root" ${mirror:+"$mirror"} >/dev/null
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/usr/share/doc/* "$root"/usr/share/man/*

tar -C "$root" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'USER tinyproxy' \
    --change 'CMD ["tinyproxy", "-d", "-c", "/etc/praisonai-proxy/tinyproxy.conf"]' \
    --change 'LABEL org.opencontainers.image.title=praisonai-egress-proxy' \
    --change "LABEL praisonai.image.revision=$revision" \
    - "$image" >/dev/null
echo "built $image"
