#!/bin/sh
# build.sh OUTDIR: builds zkconf_VERSION_ARCH.deb into OUTDIR from a staged
# tree (make install DESTDIR=...) with dpkg-deb, and prints its path. No
# debhelper: the maintainer scripts are in this directory, written like
# dh_installsystemd's (units installed disabled, never started on install).
#
# The version comes from git describe: a tag vX.Y.Z gives X.Y.Z, N commits
# after it X.Y.Z+N.gHASH; without a tag 0.0~gitDATE.HASH (the commit's
# date, so versions order like commits); uncommitted changes add +dirty.
# Binaries are static (CGO_ENABLED=0), -trimpath, stripped: the container
# image's build (packaging/docker/rootfs.sh) uses the same flags.
set -eu
outdir=${1:?usage: build.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.."
mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)

commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
desc=$(git describe --tags --always --dirty 2>/dev/null || echo "")
dirty=""
case "$desc" in *-dirty) dirty="+dirty"; desc=${desc%-dirty} ;; esac
case "$desc" in
v[0-9]*-[0-9]*-g*) version=$(echo "${desc#v}" | sed -E 's/-([0-9]+)-g([0-9a-f]+)$/+\1.g\2/') ;;
v[0-9]*) version=${desc#v} ;;
*) version="0.0~git$(date -u -d "@$epoch" +%Y%m%d%H%M%S).$(git rev-parse --short=7 HEAD 2>/dev/null || echo 0)" ;;
esac
# -1: the first (and only) Debian revision of that upstream version.
version="$version$dirty-1"
arch=$(dpkg --print-architecture)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stage=$work/root
CGO_ENABLED=0 make --no-print-directory install DESTDIR="$stage" BIN="$work/bin" \
	PREFIX=/usr UNITDIR=/lib/systemd/system ZSHCOMPDIR=/usr/share/zsh/vendor-completions \
	GOBUILDFLAGS=-trimpath EXTRA_LDFLAGS="-s -w" >"$work/make.log" 2>&1 || { cat "$work/make.log" >&2; exit 1; }

doc=$stage/usr/share/doc/zkconf
# postinst gives the configuration to root:confagent 0640 (the group does
# not exist before it runs).
chmod 0644 "$stage/etc/confagent/confagent.yaml"
gzip -9n "$stage"/usr/share/man/man1/*.1
modules=$(go version -m "$work/bin/confagent" "$work/bin/confpush" | awk '$1 == "dep" { print " " $2 " " $3 }' | sort -u)
years=$(git log --format=%cd --date=format:%Y 2>/dev/null | sed -n '$p;1p' | sort -u | paste -sd- || true)
sed -e "s|@COMMIT@|$commit|" -e "s|@YEARS@|${years:-$(date -u -d "@$epoch" +%Y)}|" "$here/copyright.in" | awk -v m="$modules" '$0 == "@MODULES@" { print m; next } { print }' >"$doc/copyright"
{
	printf 'zkconf (%s) unstable; urgency=medium\n\n' "$version"
	printf '  * Built from git commit %s.\n\n' "$commit"
	printf ' -- zkconf developers <dev@zkconf.invalid>  %s\n' "$(date -u -R -d "@$epoch")"
} | gzip -9n >"$doc/changelog.Debian.gz"
install -d "$stage/usr/share/lintian/overrides"
install -m 0644 "$here/lintian-overrides" "$stage/usr/share/lintian/overrides/zkconf"

install -d -m 0755 "$stage/DEBIAN"
install -m 0755 "$here/postinst" "$here/prerm" "$here/postrm" "$stage/DEBIAN/"
install -m 0644 "$here/conffiles" "$stage/DEBIAN/conffiles"
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -print | sed 's|^\./||' | LC_ALL=C sort | xargs md5sum) >"$stage/DEBIAN/md5sums"
chmod 0644 "$stage/DEBIAN/md5sums"
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
sed -e "s|@VERSION@|$version|" -e "s|@ARCH@|$arch|" -e "s|@SIZE@|$size|" "$here/control.in" >"$stage/DEBIAN/control"
deb="$outdir/zkconf_${version}_${arch}.deb"
# DEB_XZ_LEVEL: xz's preset, 6 (dpkg-deb's default) unless set. make
# deb-test builds with 0: the same format and contents, in 4 CPU-seconds
# instead of 32 (measured), and the package 17 % larger.
dpkg-deb --root-owner-group -Zxz -z"${DEB_XZ_LEVEL:-6}" --build "$stage" "$deb" >/dev/null
echo "$deb"
