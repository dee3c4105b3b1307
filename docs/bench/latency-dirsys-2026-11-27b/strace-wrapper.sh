#!/bin/sh
exec strace -f -qq -o /tmp/dirsys-st/B2-$$.txt /tmp/dirsys-B2-confagent "$@"
