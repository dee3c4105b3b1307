#!/bin/bash
# ab.sh LABEL ROUNDS DIR_A DIR_B: alternated runs (A B A B ...) of confagent from DIR_A and DIR_B
# (everything else main's), sets 20/1,20/20,100/100 x 1 KiB, --keep in TMPDIR=/bx-agentcut; one line per set and run in ab-LABEL.log
label=$1; rounds=$2; A=$3; B=$4; log=/bx-agentcut/ab-$label.log
for r in $(seq 1 $rounds); do
 for d in $A ${B}; do
  tag=$label-$r-$(basename $d)
  l0=$(cut -d' ' -f1 /proc/loadavg); t0=$(date -u +%H:%M)
  TMPDIR=${TD:-/bx-agentcut} /bx-agentcut/bin-main/confbench latency --sets ${SETS:-20/1,20/20,100/100} --item-sizes 1k --memory-items 0 --fleet-results none --independent none --publishes ${PUB:-50} --keep \
    --confagent-bin $d/confagent --zkraw-bin /bx-agentcut/bin-main/zkraw --zkfloor-bin /bx-agentcut/bin-main/zkfloor --confpush-bin /bx-agentcut/bin-main/confpush \
    --out /bx-agentcut/runs/$tag > /bx-agentcut/runs/$tag.log 2>&1
  l1=$(cut -d' ' -f1 /proc/loadavg)
  md=/bx-agentcut/runs/$tag/latency-results.md
  for s in "20/1" "20/20" "100/100"; do
    cpu=$(awk '/^\| set \| agent CPU/{f=1} f&&/^$/{f=0} f' $md | grep "^| $s × 1 KiB" | awk -F'|' '{print $3,$4,$5}')
    dir=$(grep "^| $s × 1 KiB | confagent dir | in-process" $md | head -1 | awk -F'|' '{print $5}')
    cfd=$(grep "^| $s × 1 KiB | confd-style | in-process" $md | head -1 | awk -F'|' '{print $5}')
    printf "%s %-22s load %5s→%-5s %-8s cpu agent·follower·ratio %s | ack→rendered p50 dir %s confd %s\n" "$t0" "$tag" "$l0" "$l1" "$s" "$cpu" "$dir" "$cfd" >> $log
  done
 done
done
