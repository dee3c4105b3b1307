#!/bin/bash
# ab.sh OUTDIR label=bin ... : alternated runs, prints agent CPU per publish
out=$1; shift; rounds=${ROUNDS:-2}
mkdir -p $out
cd /work/wt/cpufive/tools
for r in $(seq 1 $rounds); do
  for spec in "$@"; do
    label=${spec%%=*}; bin=${spec#*=}
    d=$out/$label-$r; mkdir -p $d
    l0=$(cut -d' ' -f1 /proc/loadavg)
    /tmp/cb-cpufive latency --sets 20/1 --item-sizes 1k --publishes ${PUBS:-30} --memory-items 0 --fleet-results none --confagent-bin $bin $EXTRA --out $d > $d/log 2>&1
    row=$(grep -A3 "^| set | agent CPU ms" $d/latency-results.md | tail -1)
    echo "$label r$r load=$l0 $(echo $row | awk -F'|' '{print "agent="$3" follower="$4" ratio="$5}')" | tee -a $out/summary.txt
  done
done
