#!/bin/bash
# ab.sh LABEL ROUNDS FS(jfs|root) BIN_A BIN_B: alternated runs A B A B ...; appends a line per set to ab-LABEL.log
label=$1; rounds=$2; fs=$3; A=$4; B=$5
log=/tmp/as/ab-$label.log
if [ $fs = jfs ]; then export TMPDIR=/tmp/as/jfs; else unset TMPDIR; fi
for r in $(seq 1 $rounds); do
 for bin in $A $B; do
  tag=$label-$r-$(basename $bin)
  l0=$(cut -d' ' -f1 /proc/loadavg)
  /tmp/as/bin/confbench latency --sets ${SETS:-100/100,20/20,20/1} --item-sizes 1k --memory-items 0 --fleet-results none --publishes ${PUB:-30} \
    --confagent-bin $bin --zkraw-bin /tmp/as/bin/zkraw --zkfloor-bin /tmp/as/bin/zkfloor --confpush-bin /tmp/as/bin/confpush \
    --out /tmp/as/runs/$tag > /tmp/as/runs/$tag.log 2>&1
  l1=$(cut -d' ' -f1 /proc/loadavg)
  grep -A4 '^| set | agent CPU' /tmp/as/runs/$tag/latency-results.md | tail -n +3 | awk -F'|' -v t="$tag" -v fs=$fs -v l="$l0→$l1" -v d="$(date -u +%H:%M)" '{gsub(/ /,"",$2); printf "%s %s %s load %s %-16s agent %6s raw %6s ratio %s\n", d, fs, t, l, $2, $3, $4, $5}' >> $log
 done
done
