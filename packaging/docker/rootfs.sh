#!/bin/sh
# rootfs.sh OUT: the root file system of zkconf's container image, built by
# the Dockerfile's build stage (and by packaging's TestContainerImage, which
# builds the image's final stage offline from it). OUT/rootfs, owned by root:
#
#   /confagent, /confpush               static (CGO_ENABLED=0), stripped
#   /etc/ssl/certs/ca-certificates.crt  for TLS to ZooKeeper
#   /etc/passwd, /etc/group             root and confagent (65532), no shells
#   /etc/confagent/                     where the configuration is mounted
#   /tmp                                1777
#
# and OUT/state, the state directory /var/lib/confagent, which the
# Dockerfile copies with --chown=65532:65532.
#
# Run from the repository root. VERSION and COMMIT name the build
# (--version, zkconf_build_info).
set -eu
state=${1:?usage: rootfs.sh OUT}/state
out=$1/rootfs
buildinfo=github.com/zkconf/zkconf/internal/buildinfo
mkdir -p "$out/etc/ssl/certs" "$out/etc/confagent" "$out/var/lib" "$out/tmp" "$state"
CGO_ENABLED=0 go build -trimpath \
	-ldflags "-s -w -X $buildinfo.version=${VERSION:-dev} -X $buildinfo.commit=${COMMIT:-}" \
	-o "$out/" ./cmd/confagent ./cmd/confpush
cp /etc/ssl/certs/ca-certificates.crt "$out/etc/ssl/certs/ca-certificates.crt"
printf '%s\n' 'root:x:0:0:root:/:/nonexistent' 'confagent:x:65532:65532:confagent:/var/lib/confagent:/nonexistent' >"$out/etc/passwd"
printf '%s\n' 'root:x:0:' 'confagent:x:65532:' >"$out/etc/group"
chmod 0755 "$out/confagent" "$out/confpush" "$out/etc" "$out/etc/confagent" "$out/var" "$out/var/lib"
chmod 0755 "$state"
chmod 0644 "$out/etc/passwd" "$out/etc/group" "$out/etc/ssl/certs/ca-certificates.crt"
chmod 1777 "$out/tmp"
