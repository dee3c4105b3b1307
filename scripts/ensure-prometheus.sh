#!/usr/bin/env bash
# ensure-prometheus.sh makes promtool available for the tests of
# examples/monitoring (promtool check rules, promtool test rules, promtool
# check metrics).
#
# If PROMTOOL is set, that binary is trusted as is (another install).
# Otherwise the Debian package `prometheus` (which ships /usr/bin/promtool) is
# installed with apt-get when promtool is missing. Nothing is downloaded
# outside the package manager. Idempotent and quiet when promtool is there.
set -euo pipefail

if [ -n "${PROMTOOL:-}" ]; then
  if [ -x "$PROMTOOL" ]; then exit 0; fi
  echo "ensure-prometheus: PROMTOOL=$PROMTOOL is not an executable file" >&2
  exit 1
fi

if command -v promtool >/dev/null 2>&1; then
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-prometheus: promtool is missing and apt-get is not available;" >&2
  echo "install Prometheus's promtool and put it on PATH, or set PROMTOOL to its path." >&2
  exit 1
fi

sudo=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
    echo "ensure-prometheus: need root (or sudo) to install the prometheus package" >&2; exit 1
  fi
fi

echo "ensure-prometheus: installing the Debian prometheus package (for promtool)..." >&2
export DEBIAN_FRONTEND=noninteractive
# Another install may hold the dpkg lock (ensure-zookeeper.sh, a browser
# install): wait for it rather than fail.
lock="-o DPkg::Lock::Timeout=300"
$sudo apt-get $lock update -qq >/dev/null
# The package's maintainer scripts may try to start the prometheus service; in
# a container without systemd that is a no-op. Tests never use the service.
$sudo apt-get $lock install -y -qq --no-install-recommends prometheus >/dev/null
if ! command -v promtool >/dev/null 2>&1; then
  echo "ensure-prometheus: the prometheus package did not provide promtool" >&2
  exit 1
fi
echo "ensure-prometheus: promtool from prometheus $(dpkg-query -W -f='${Version}' prometheus) installed" >&2
