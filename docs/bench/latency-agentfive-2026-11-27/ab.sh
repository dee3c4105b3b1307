#!/bin/bash
# ab2.sh N: N alternated pairs (base, dirsync) of --sets 20/1,20/20 × 1 KiB, 50 publishes, perf stat attached.
for i in $(seq 1 $1); do
  for v in base dirsync; do
    SETS=20/1,20/20 ./run.sh d$i-$v stat /tmp/agentfive/confagent-$v --publishes 50
  done
done
