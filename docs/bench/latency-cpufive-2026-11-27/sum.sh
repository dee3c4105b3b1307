#!/bin/bash
# sum.sh DIR: agent CPU, follower CPU, load per run dir
for d in $(ls -dtr $1/*/); do
  f=$d/latency-results.md; [ -f $f ] || continue
  row=$(grep -A2 "^| set | agent CPU ms" $f | tail -1)
  ld=$(grep -o "Load average [0-9.]* at the start" $f | grep -o "[0-9.]*")
  ack=$(grep "| confagent dir | in-process" $f | head -1 | awk -F'|' '{print $5}')
  echo "$(basename $d) load=$ld agent=$(echo $row | awk -F'|' '{print $3}') follower=$(echo $row | awk -F'|' '{print $4}') dir-ack-p50=$ack"
done
