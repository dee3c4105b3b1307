#!/bin/sh
# --confagent-bin: the agent under strace -f (full trace, written as it goes); the agent records its pid.
exec strace -f -qq -o /tmp/infoline/stf-${TAG}-$$.txt sh -c 'echo $$ >> /tmp/infoline/agent-pids; exec /tmp/infoline/confagent-'${TAG}' "$@"' sh "$@"
