#!/bin/sh
# ab.sh: A (main's confagent) and B (graveyard) alternated, the quick latency run of HELPERS.md
# with prebuilt binaries (so that no go build churns inodes in this group), inode tracepoints recorded.
B=/bx-agentfree/bin
cd /work/wt/agentfree/tools
export TMPDIR=/bx-agentfree
for i in 1 2 3; do
  for v in A B; do
    if [ $v = A ]; then A=$B/confagent; else A=/bx-agentfree/binB/confagent; fi
    T=ab$i$v
    python3 -c 'import time;print(time.time()-time.clock_gettime(time.CLOCK_MONOTONIC))' > /bx-agentfree/ino-$T.off
    echo "$(date -u +%H:%M:%S) load before: $(cat /proc/loadavg)" > /bx-agentfree/ino-$T.log
    perf record -q -a -k mono -e ext4:ext4_free_inode -e ext4:ext4_allocate_inode -o /bx-agentfree/ino-$T.data -- $B/confbench latency --sets 20/20,20/1 --item-sizes 1k,4k --memory-items 0 --fleet-results none --confagent-bin $A --zkraw-bin $B/zkraw --confpush-bin $B/confpush --zkfloor-bin $B/zkfloor --out /bx-agentfree/out-$T >> /bx-agentfree/ino-$T.log 2>&1
    echo "$(date -u +%H:%M:%S) load after: $(cat /proc/loadavg)" >> /bx-agentfree/ino-$T.log
    perf script -i /bx-agentfree/ino-$T.data -F comm,pid,cpu,time,event,trace 2>/dev/null > /bx-agentfree/ino-$T.txt
    rm -f /bx-agentfree/ino-$T.data
  done
done
echo done > /bx-agentfree/ab.done
