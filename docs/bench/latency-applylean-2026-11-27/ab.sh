#!/bin/sh
# ab.sh TAG...: one quick latency run per binary /tmp/al/confagent-TAG, in the order given;
# prints load and the CPU table rows.
cd /work/wt/applylean/tools
for tag in "$@"; do
  out=/tmp/al/ab/$tag-$(date +%H%M%S)
  mkdir -p $out
  l0=$(cut -d' ' -f1 /proc/loadavg)
  /tmp/al/confbench latency --sets 20/20,20/1 --item-sizes 1k,4k --memory-items 0 --fleet-results none --confagent-bin /tmp/al/confagent-$tag --out $out > $out/log 2>&1
  l1=$(cut -d' ' -f1 /proc/loadavg)
  echo "== $tag load $l0 -> $l1 ($out)"
  awk '/^\| set \| agent CPU ms/{f=1} f&&/^\| 20/{print} f&&/^$/{f=0}' $out/latency-results.md
done
