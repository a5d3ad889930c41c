#!/usr/bin/env bash
# Build the kpysched image from the Dockerfile, unchanged, with no registry at hand.
#
#   bash scripts/build-image.sh                      # build, write the OCI archive
#   bash scripts/build-image.sh --import-into .cluster   # ... and import it into that
#                                                        # cluster's real node (containerd)
#
# 1. The base: an equivalent of python:3.11-slim-bookworm made from Debian's own
#    packages with mmdebstrap (bookworm's python3 is 3.11, the version constraints.txt
#    was resolved for). Cached as a tarball; --rebuild-base makes it afresh.
# 2. `buildah bud -f Dockerfile --build-arg BASE_IMAGE=<that base>`: the Dockerfile's
#    own steps, so what runs here is what a `docker build` on a real cluster runs.
#    pip fetches kpysched's dependencies (wheels) from PyPI during the build.
# 3. Exported as an OCI archive tagged localhost/kpysched:<version> (the name deploy/
#    and the tests use), which `ctr images import` reads.
#
# On a real cluster do instead: build with docker/buildah as usual, push to your
# registry, and install with `--set image.repository=<registry>/kpysched`.
#
# Needs root (buildah's storage, mmdebstrap's root mode); installs mmdebstrap and
# buildah from Debian when missing. Environment overrides: KPYSCHED_CACHE (cache root,
# default ~/.cache/kpysched), STORAGE_DRIVER (buildah storage: overlay by default,
# vfs where overlayfs is not available).
set -euo pipefail
cd "$(dirname "$0")/.."

import_into=""
rebuild_base=0
while [ $# -gt 0 ]; do
    case "$1" in
        --import-into) import_into="$2"; shift 2 ;;
        --rebuild-base) rebuild_base=1; shift ;;
        *) echo "usage: $0 [--rebuild-base] [--import-into CLUSTER_DIR]" >&2; exit 2 ;;
    esac
done

if [ "$(id -u)" != 0 ]; then
    echo "build-image.sh needs root (buildah storage, mmdebstrap root mode)" >&2
    exit 1
fi
if ! command -v mmdebstrap >/dev/null || ! command -v buildah >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap buildah >/dev/null
fi

version="$(sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml | head -n1)"
image="localhost/kpysched:${version}"
base_image="localhost/kpysched-base:python3.11-slim-bookworm"
cache="${KPYSCHED_CACHE:-$HOME/.cache/kpysched}/images"
base_tar="$cache/python3.11-slim-bookworm.tar"
archive="$cache/kpysched-${version}.oci.tar"
mkdir -p "$cache"
export STORAGE_DRIVER="${STORAGE_DRIVER:-overlay}"
started=$(date +%s)

if [ "$rebuild_base" = 1 ] || [ ! -f "$base_tar" ]; then
    # What python:3.11-slim-bookworm holds that matters here: a minimal bookworm, the
    # interpreter with venv/ensurepip, CA certificates, and `python` on PATH (the
    # Dockerfile runs `python -m venv`). Docs, man pages and locales are left out as
    # slim images do.
    echo "[image] base: mmdebstrap bookworm -> $base_tar"
    mmdebstrap --variant=minbase --mode=root --format=tar \
        --include=python3,python3-venv,python-is-python3,ca-certificates \
        --dpkgopt='path-exclude=/usr/share/doc/*' \
        --dpkgopt='path-exclude=/usr/share/man/*' \
        --dpkgopt='path-exclude=/usr/share/locale/*' \
        --dpkgopt='path-exclude=/usr/share/info/*' \
        --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
        bookworm "$base_tar.partial" \
        "deb http://deb.debian.org/debian bookworm main" \
        "deb http://deb.debian.org/debian bookworm-updates main" \
        "deb http://deb.debian.org/debian-security bookworm-security main"
    mv "$base_tar.partial" "$base_tar"
fi

# The base tarball becomes a one-layer image in buildah's local storage, so the
# Dockerfile's FROM finds it without a registry.
echo "[image] base: $base_tar -> $base_image"
container="$(buildah from scratch)"
trap 'buildah rm "$container" >/dev/null 2>&1 || true' EXIT
buildah add --quiet "$container" "$base_tar" /
buildah config --env LANG=C.UTF-8 --cmd python3 "$container"
buildah commit --quiet --rm "$container" "$base_image" >/dev/null
trap - EXIT

# chroot isolation: RUN steps need no user namespaces or network setup of their own,
# and the build's pip reaches PyPI over the host's network. That network may pass
# through a TLS-inspecting proxy whose CA only the host trusts, so pip in the build
# trusts the host's CA bundle: both are bind mounts for the build's RUN steps only,
# never part of the image (whose own trust store is Debian's ca-certificates).
host_ca=/etc/ssl/certs/ca-certificates.crt
pip_conf="$(mktemp)"
trap 'rm -f "$pip_conf"' EXIT
printf '[global]\ncert = /etc/ssl/certs/build-host-ca.crt\n' > "$pip_conf"
echo "[image] buildah bud -f Dockerfile -> $image"
buildah bud --isolation chroot --pull=never --layers=false \
    --volume "$host_ca:/etc/ssl/certs/build-host-ca.crt:ro" \
    --volume "$pip_conf:/etc/pip.conf:ro" \
    --build-arg "BASE_IMAGE=$base_image" --build-arg "VERSION=$version" \
    -f Dockerfile -t "$image" .

# A rebuild leaves the previous image untagged; only this script's images live here.
buildah rmi --prune >/dev/null 2>&1 || true

rm -f "$archive"
buildah push --quiet "$image" "oci-archive:$archive:$image"
echo "[image] $image written to $archive in $(( $(date +%s) - started ))s"

if [ -n "$import_into" ]; then
    .venv/bin/python -m tests.cluster.kpysched_image import --dir "$import_into" "$archive"
fi
