#!/usr/bin/env bash
# ensure-chromium.sh makes a headless Chromium available for the dashboard's
# browser test (tools/dashboardtest), which drives it through chromedp.
#
# If ZKCONF_CHROMIUM is set, it is trusted as is (another install, the path of
# the browser binary). Otherwise the Debian package `chromium` is installed with
# apt-get when no chromium binary is on PATH. It never downloads browser
# binaries from anywhere else. Idempotent and quiet when it is already there.
set -euo pipefail

if [ -n "${ZKCONF_CHROMIUM:-}" ]; then
  exit 0
fi
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null 2>&1; then exit 0; fi
done

if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-chromium: no chromium on PATH and apt-get is not available;" >&2
  echo "install Chromium and set ZKCONF_CHROMIUM to the path of its binary." >&2
  exit 1
fi

sudo=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
    echo "ensure-chromium: need root (or sudo) to install the chromium package" >&2; exit 1
  fi
fi

echo "ensure-chromium: installing the Debian chromium package..." >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
$sudo apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
if ! command -v chromium >/dev/null 2>&1; then
  echo "ensure-chromium: the chromium package did not provide a chromium binary" >&2
  exit 1
fi
echo "ensure-chromium: Chromium $(dpkg-query -W -f='${Version}' chromium) installed" >&2
