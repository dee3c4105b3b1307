#!/bin/sh
# --confagent-bin for confbench latency: the agent under strace -f, one
# trace per process, counted with count.sh. Caution: when confbench stops
# this process, strace detaches and the agent keeps running: stop the
# agents it left (by pid) after the run.
exec strace -f -qq -o /tmp/dirsys-st/B2-$$.txt /tmp/dirsys-B2-confagent "$@"
