#!/bin/sh
ROLE=raw BIN=/tmp/as/bin/zkraw exec /tmp/as/wrap.sh "$@"
