#!/bin/bash
# stracewin.sh V : one 20/20 run of agent V, strace -c -f attached to the agent for a window; prints syscalls and applies in the window
V=$1
out=/tmp/rf/stw/$V-$(date +%s); mkdir -p $out
/tmp/rf/cb-keep latency --sets 20/20 --item-sizes 1k --publishes 30 --memory-items 0 --fleet-results none --confagent-bin /tmp/rf/confagent-$V --confpush-bin /tmp/rf/confpush --zkraw-bin /tmp/rf/zkraw --zkfloor-bin /tmp/rf/zkfloor --out $out/res > $out/cb.log 2>&1 &
cbpid=$!
for i in $(seq 1 300); do d=$(grep -o '/tmp/confbench-latency[0-9]*' $out/cb.log | head -1); [ -n "$d" ] && [ -f $d/lat-20-20-1024-0/confagent.log ] && break; sleep 0.2; done
log=$d/lat-20-20-1024-0/confagent.log
for i in $(seq 1 300); do n=$(grep -c '"apply timings"' $log); [ "$n" -ge 10 ] && break; sleep 0.2; done
apid=$(pgrep -n -f "^/tmp/rf/confagent-$V ")
n0=$(grep -c '"apply timings"' $log)
strace -f -c -p $apid -o $out/strace.txt & spid=$!
sleep 5
kill -INT $spid; wait $spid
n1=$(grep -c '"apply timings"' $log)
echo "$V applies $((n1-n0))" > $out/applies.txt
wait $cbpid
rm -rf $d
echo $out
