#!/usr/bin/env bash
# ensure-zookeeper.sh makes a ZooKeeper server available for zkconf's tests and demo
# (and systemd-analyze, which the unit-file test runs).
#
# If ZOOKEEPER_CLASSPATH is set, it is trusted as is (another install). Otherwise
# the Debian package `zookeeper` is installed when /usr/share/java/zookeeper.jar
# is missing. Idempotent and quiet when everything is already there.
set -euo pipefail

if [ -n "${ZOOKEEPER_CLASSPATH:-}" ] && command -v systemd-analyze >/dev/null 2>&1; then
  exit 0
fi

need_java=0
command -v java >/dev/null 2>&1 || need_java=1
need_sa=0
command -v systemd-analyze >/dev/null 2>&1 || need_sa=1
if [ -f /usr/share/java/zookeeper.jar ] && [ "$need_java" = 0 ] && [ "$need_sa" = 0 ]; then
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-zookeeper: /usr/share/java/zookeeper.jar is missing and apt-get is not available;" >&2
  echo "install Apache ZooKeeper and set ZOOKEEPER_CLASSPATH to its classpath (conf dir and jars)." >&2
  exit 1
fi

sudo=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
    echo "ensure-zookeeper: need root (or sudo) to install the zookeeper package" >&2; exit 1
  fi
fi

echo "ensure-zookeeper: installing the Debian zookeeper package..." >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
pkgs="zookeeper"
[ "$need_java" = 1 ] && pkgs="$pkgs default-jre-headless"
[ "$need_sa" = 1 ] && pkgs="$pkgs systemd"
# The package's maintainer scripts may try to start a service; in a container
# without systemd that is a no-op. Tests never use the system service.
$sudo apt-get install -y -qq --no-install-recommends $pkgs >/dev/null
if [ ! -f /usr/share/java/zookeeper.jar ]; then
  echo "ensure-zookeeper: the zookeeper package did not provide /usr/share/java/zookeeper.jar" >&2
  exit 1
fi
echo "ensure-zookeeper: ZooKeeper $(dpkg-query -W -f='${Version}' zookeeper) installed" >&2
