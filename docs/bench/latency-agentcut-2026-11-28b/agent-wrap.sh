#!/bin/sh
ROLE=agent BIN=$AGENT_BIN exec /bx-agentcut/wrap.sh "$@"
