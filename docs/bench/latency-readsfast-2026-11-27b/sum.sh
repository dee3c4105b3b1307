#!/bin/bash
# per run: reads p50, in hand, confd in hand, rendered dir, confd rendered, agent CPU, confd CPU (20/20 and 20/1)
for r in "$@"; do
 f=/tmp/rf/runs/$r/latency-results.md
 [ -f $f ] || continue
 for s in "20/1" "20/20"; do
  ph=$(grep -A4 "^| set | notification" $f | grep "^| $s × 1 KiB" | awk -F'|' '{printf "reads %s inhand %s confd_inhand %s", $4,$6,$7}')
  ad=$(grep -E "^\| $s × 1 KiB \| confagent dir \| in-process" $f | awk -F'|' '{print $5}')
  cd=$(grep -E "^\| $s × 1 KiB \| confd-style \| in-process" $f | awk -F'|' '{print $5}')
  cpu=$(grep -E "^\| $s × 1 KiB \| [0-9.]+ \| [0-9.]+ \| [0-9.]+×" $f | awk -F'|' '{print $3, $4}')
  ld=$(grep "^$r " /tmp/rf/runs/loads.txt | cut -d' ' -f2-)
  echo "$r $s | $ph | dir $ad confd $cd | cpu agent/confd $cpu | $ld"
 done
done
