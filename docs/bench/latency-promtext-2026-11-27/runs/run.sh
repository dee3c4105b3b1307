#!/bin/bash
# ABAB... alternation: B1 A1 B2 A2
cd /work/wt/promtext/tools
for r in $RUNS; do
  bin=/tmp/promtext-${r:0:1}-confagent
  echo "$r start $(date -u +%T) $(cat /proc/loadavg)" >> /tmp/promtext-runs/runs.log
  /tmp/promtext-confbench latency --sets 20/20,20/1 --item-sizes 64k --publishes 20 --memory-items 0 --fleet-results none \
    --confagent-bin $bin --confpush-bin /tmp/promtext-confpush --zkraw-bin /tmp/promtext-zkraw --zkfloor-bin /tmp/promtext-zkfloor \
    --out /tmp/promtext-runs/$r > /tmp/promtext-runs/$r.log 2>&1
  echo "$r end $(date -u +%T) rc=$? $(cat /proc/loadavg)" >> /tmp/promtext-runs/runs.log
done
