#!/bin/sh
echo $$ >> /tmp/as/runs/$TAG.$ROLE.pid
exec "$BIN" "$@"
