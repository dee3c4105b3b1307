#!/bin/sh
# acct.sh TAG AGENTBIN: one 20/1,20/20 x 1 KiB run (30 publishes) with ext4 inode tracepoints recorded
set -e
T=$1; A=$2; B=/bx-agentfree/bin
cd /work/wt/agentfree/tools
export TMPDIR=/bx-agentfree
python3 -c 'import time;print(time.time()-time.clock_gettime(time.CLOCK_MONOTONIC))' > /bx-agentfree/ino-$T.off
echo "load before: $(cat /proc/loadavg)" > /bx-agentfree/ino-$T.log
perf record -q -a -k mono -e ext4:ext4_free_inode -e ext4:ext4_allocate_inode -o /bx-agentfree/ino-$T.data -- $B/confbench latency --sets 20/1,20/20 --item-sizes 1k --memory-items 0 --fleet-results none --independent none --publishes 30 --confagent-bin $A --zkraw-bin $B/zkraw --confpush-bin $B/confpush --zkfloor-bin $B/zkfloor --out /bx-agentfree/out-$T >> /bx-agentfree/ino-$T.log 2>&1
echo "load after: $(cat /proc/loadavg)" >> /bx-agentfree/ino-$T.log
perf script -i /bx-agentfree/ino-$T.data -F comm,pid,cpu,time,event,trace 2>/dev/null > /bx-agentfree/ino-$T.txt
rm -f /bx-agentfree/ino-$T.data
