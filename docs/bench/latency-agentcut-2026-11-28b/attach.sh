#!/bin/bash
# attach.sh TAG MODE: waits for each role's first pid, attaches MODE until it exits.
tag=$1; mode=$2; d=/bx-agentcut/runs
for role in agent raw; do
 ( while [ ! -s $d/$tag.$role.pid ]; do sleep 0.05; done
   pid=$(head -1 $d/$tag.$role.pid); sleep 0.3
   case $mode in
   strace) strace -c -f -qq -p $pid -o $d/$tag.$role.strace ;;
   perf) perf record -F 1999 -g -p $pid -o $d/$tag.$role.perf.data 2>/dev/null ;;
   sysc) perf record -e raw_syscalls:sys_enter -g -p $pid -o $d/$tag.$role.sysc.data 2>/dev/null ;;
   esac ) &
done
wait
