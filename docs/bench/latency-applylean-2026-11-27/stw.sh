#!/bin/sh
# --confagent-bin for confbench latency: the agent under strace -f -tt.
# Records the pid so that an agent strace leaves behind can be stopped by pid.
echo $$ >> /tmp/al/st/pids-${TAG}
exec strace -f -qq -tt -o /tmp/al/st/${TAG}-$$.txt /tmp/al/confagent-${TAG} "$@"
