#!/bin/sh
echo $$ >> /bx-agentcut/runs/$TAG.$ROLE.pid
exec "$BIN" "$@"
