#!/usr/bin/env bash
# ensure-packaging.sh installs what make deb-test (packaging/packaging_test.go)
# needs, from Debian's packages, when it is missing: lintian (checks the
# .deb), buildah and runc (build the container image from the Dockerfile's
# final stage and run it, offline), util-linux's unshare (the throw-away root
# dpkg installs into). dpkg-deb and
# systemd-analyze come with the base system. Idempotent and quiet when all
# is there. The tests also need root (mounts, chroot, containers).
set -euo pipefail

missing=()
for tool in lintian:lintian buildah:buildah runc:runc unshare:util-linux systemd-analyze:systemd dpkg-deb:dpkg; do
	if ! command -v "${tool%%:*}" >/dev/null 2>&1; then missing+=("${tool##*:}"); fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
	echo "ensure-packaging: missing ${missing[*]} and apt-get is not available" >&2
	exit 1
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
	if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
		echo "ensure-packaging: need root (or sudo) to install ${missing[*]}" >&2; exit 1
	fi
fi
echo "ensure-packaging: installing ${missing[*]}..." >&2
export DEBIAN_FRONTEND=noninteractive
lock="-o DPkg::Lock::Timeout=300"
$sudo apt-get $lock update -qq >/dev/null
$sudo apt-get $lock install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "ensure-packaging: installed ${missing[*]}" >&2
