#!/bin/sh
ROLE=raw BIN=/bx-agentcut/bin-main/zkraw exec /bx-agentcut/wrap.sh "$@"
