#!/bin/bash
# attach.sh TAG MODE: waits for each role's pid file, then attaches MODE (stat|strace|perf) to it until it exits.
tag=$1; mode=$2; d=/tmp/agentfive/runs
for role in agent raw; do
 ( while [ ! -s $d/$tag.$role.pid ]; do sleep 0.05; done
   pid=$(cat $d/$tag.$role.pid); sleep 0.3
   case $mode in
   stat) ( while [ -e /proc/$pid ]; do cat /proc/$pid/stat > $d/$tag.$role.procstat.tmp 2>/dev/null && mv $d/$tag.$role.procstat.tmp $d/$tag.$role.procstat; sleep 0.2; done ) & perf stat -e task-clock,user_time,system_time,context-switches,cpu-migrations,page-faults -p $pid -o $d/$tag.$role.stat ;;
   strace) strace -c -f -qq -p $pid -o $d/$tag.$role.strace ;;
   perf) perf record -F 1999 -g -p $pid -o $d/$tag.$role.perf.data 2>/dev/null ;;
   full) strace -f -tt -qq -p $pid -o $d/$tag.$role.full 2>/dev/null ;;
   sysc) perf record -e raw_syscalls:sys_enter -g -p $pid -o $d/$tag.$role.sysc.data 2>/dev/null ;;
   esac ) &
done
wait
