#!/bin/bash
# fsruns.sh ROUNDS: main's confagent, the same sets on the root fs (/bx-agentcut, ext4 without a journal, discard),
# tmpfs (/dev/shm) and a journalled ext4 image (loop, /bx-agentcut/jfs), alternated; lines in ab-fs-*.log
for r in $(seq ${START:-1} $1); do
  TD=/bx-agentcut ./ab.sh fs-root-$r 1 /bx-agentcut/bin-main ""
  TD=/dev/shm/agentcut ./ab.sh fs-tmpfs-$r 1 /bx-agentcut/bin-main ""
  TD=/bx-agentcut/jfs ./ab.sh fs-jfs-$r 1 /bx-agentcut/bin-main ""
done
