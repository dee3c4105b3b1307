#!/bin/sh
# wrap.sh: record this process's pid under the run's tag and role, then exec the binary (same pid).
echo $$ > /tmp/agentfive/runs/$TAG.$ROLE.pid
exec "$BIN" "$@"
