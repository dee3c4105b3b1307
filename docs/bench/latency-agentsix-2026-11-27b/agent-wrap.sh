#!/bin/sh
ROLE=agent BIN=$AGENT_BIN exec /tmp/as/wrap.sh "$@"
