#!/bin/sh
# agent · follower CPU ms per publish (ratio), and phases, per run
cd /tmp/infoline
for r in "$@"; do
  awk -v r=$r -F'|' '/^## CPU and memory/{c=1;p=0} /^## The agent.s phases/{p=1} /^## `confpush/{c=0;p=0}
   c && /^\| 20\//{printf "%-4s %-14s cpu %6s · %6s (%s)", r, $2, $3, $4, $5}
   p && /^\| 20\//{ph[$2]=sprintf("reads %s persist %s stage %s swap %s rendered %s", $4, $8, $9, $11, $12)}
   c && /^\| 20\//{print "  " ph[$2]}' $r/latency-results.md
done
