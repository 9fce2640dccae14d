#!/usr/bin/env bash
# Build the egress proxy image for the allowlists (`network: {allow: [...]}`) of docker and
# kubernetes without a container registry, as images/build-offline.sh builds the sandbox image
# (images/rootfs.sh): a minimal Debian with tinyproxy from Debian's packages. The provider writes
# the proxy's configuration into each proxy container (or pod) when it creates it (the instance
# cannot reach it).
#
# usage: images/build-proxy.sh [IMAGE_NAME]      (default: praisonai-egress-proxy:latest; needs
#        root, debootstrap and a running Docker engine; under a minute)
set -euo pipefail

# Bump with every change to what the image holds: .ci/run rebuilds an image of an older revision.
revision=1

# shellcheck source=images/rootfs.sh
. "$(dirname "$0")/rootfs.sh"
import_rootfs "${1:-praisonai-egress-proxy:latest}" tinyproxy \
    --change 'CMD ["tinyproxy", "-d", "-c", "/etc/tinyproxy/tinyproxy.conf"]' \
    --change 'LABEL org.opencontainers.image.title=praisonai-egress-proxy' \
    --change "LABEL praisonai.image.revision=$revision"
