#!/bin/sh
# --confagent-bin: the agent with GODEBUG=gctrace=1; its log copied every second while it runs.
cfgdir=$(dirname "$2")
me=$$
( while kill -0 $me 2>/dev/null; do cp "$cfgdir/confagent.log" /tmp/infoline/gc-${TAG}-$me.log 2>/dev/null; sleep 1; done ) &
GODEBUG=gctrace=1 exec /tmp/infoline/confagent-${TAG} "$@"
