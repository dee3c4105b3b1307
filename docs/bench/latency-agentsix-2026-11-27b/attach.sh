#!/bin/bash
# attach.sh TAG MODE: waits for each role's pid file, then attaches MODE to it until it exits.
tag=$1; mode=$2; d=${RUNS:-/tmp/as/runs}
for role in agent raw; do
 ( while [ ! -s $d/$tag.$role.pid ]; do sleep 0.05; done
   pid=$(head -1 $d/$tag.$role.pid); sleep 0.3
   case $mode in
   strace) strace -c -f -qq -p $pid -o $d/$tag.$role.strace ;;
   perf) perf record -F 1999 -g -p $pid -o $d/$tag.$role.perf.data 2>/dev/null ;;
   creat) strace -f -T -qq -e trace=openat -p $pid -o $d/$tag.$role.creat 2>/dev/null ;;
   full) strace -f -tt -T -qq -p $pid -o $d/$tag.$role.full 2>/dev/null ;;
   sysc) perf record -e raw_syscalls:sys_enter -g -p $pid -o $d/$tag.$role.sysc.data 2>/dev/null ;;
   esac ) &
done
wait
