#!/usr/bin/env bash
# Makes the Dockerfile's two base images locally, for machines that cannot reach a
# registry (see ../shared/notes/containers.md):
#
#   docker.io/library/debian:bookworm-slim   debootstrap --variant=minbase bookworm, without
#                                            docs, locales and apt lists
#   docker.io/library/swift:6.3-bookworm     that, plus the official image's build packages,
#                                            the Swift toolchain installed on this machine
#                                            (SWIFT_TOOLCHAIN, default /opt/swift) in /usr,
#                                            and this machine's Swift package mirror
#                                            (SWIFT_PACKAGES, default /opt/swift-packages)
#                                            wired in with git's insteadOf, standing in for
#                                            GitHub
#
# Usage: Docker/base-images.sh WORKDIR   (podman; CONTAINERS_CONF and CONTAINERS_STORAGE_CONF
# as the caller set them). Images that exist already are kept.
set -euo pipefail

work=${1:?usage: base-images.sh WORKDIR}
toolchain=${SWIFT_TOOLCHAIN:-/opt/swift}
packages=${SWIFT_PACKAGES:-/opt/swift-packages}
debian=docker.io/library/debian:bookworm-slim
swift=docker.io/library/swift:6.3-bookworm
mirror=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
mirror=${mirror:-http://deb.debian.org/debian}

log() { printf 'base-images: %s\n' "$*" >&2; }

if ! podman image exists "$debian"; then
    log "debootstrap --variant=minbase bookworm from $mirror"
    rootfs="$work/rootfs"
    rm -rf "$rootfs"
    debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 ||
        { tail -n 20 "$work/debootstrap.log" >&2; exit 1; }
    rm -rf "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/* \
        "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin
    tar --numeric-owner -C "$rootfs" -c . | podman import -q - "$debian" >/dev/null
    rm -rf "$rootfs"
    log "made $debian"
fi

if ! podman image exists "$swift"; then
    [[ -x $toolchain/usr/bin/swift ]] || { log "no Swift toolchain at $toolchain"; exit 1; }
    log "build packages of the official swift image"
    podman build -q --pull=never --network=host -t localhost/lookout-swift-deps -f - "$work" >/dev/null <<CONTAINERFILE
FROM $debian
RUN apt-get update \\
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \\
        binutils git gnupg2 libc6-dev libcurl4-openssl-dev libedit2 libgcc-12-dev libncurses6 \\
        libpython3.11 libsqlite3-0 libstdc++-12-dev libxml2-dev libz3-dev pkg-config tzdata \\
        zlib1g-dev unzip ca-certificates \\
    && rm -rf /var/lib/apt/lists/*
CONTAINERFILE
    log "toolchain from $toolchain, packages from $packages"
    container=$(podman create localhost/lookout-swift-deps true)
    root=$(podman mount "$container")
    cp -a "$toolchain"/usr/. "$root"/usr/
    if [[ -d $packages ]]; then
        mkdir -p "$root"/opt
        cp -a "$packages" "$root"/opt/
        printf '[url "%s/"]\n\tinsteadOf = https://github.com/\n' "/opt/$(basename "$packages")" >"$root"/etc/gitconfig
    fi
    podman unmount "$container" >/dev/null
    podman commit -q "$container" "$swift" >/dev/null
    podman rm "$container" >/dev/null
    podman rmi localhost/lookout-swift-deps >/dev/null
    log "made $swift"
fi
