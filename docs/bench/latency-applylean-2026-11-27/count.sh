#!/bin/sh
# count.sh TRACE: system calls per apply (applies = the state file's fdatasyncs); -tt traces
f=$1
n=$(grep -c 'fdatasync(' "$f")
grep -v -- '--- SIG\|+++ exited\|<... .* resumed>' "$f" | sed -E 's/^[0-9]+ +//; s/^[0-9:.]+ //' | sed -E 's/\(.*//' | sort | uniq -c | sort -rn | awk -v n=$n '{printf "%-16s %8.1f\n", $2, $1/n; t+=$1} END {printf "%-16s %8.1f  (applies %d)\n", "total", t/n, n}'
