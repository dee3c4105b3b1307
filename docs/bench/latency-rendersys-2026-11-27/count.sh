#!/bin/sh
# system calls per publish in an strace -f file: counts by name divided by the
# publishes (fdatasync: the state file's, one per apply)
f=$1
n=$(grep -v 'resumed>' "$f" | grep -c 'fdatasync(')
echo "publishes (fdatasync): $n"
grep -v 'resumed>' "$f" | sed -E 's/^[0-9]+ +//' | grep -oE '^[a-z_0-9]+\(' | sort | uniq -c | sort -rn | awk -v n=$n '{s+=$1; printf "%8.1f %s\n", $1/n, $2} END {printf "%8.1f total\n", s/n}'
echo "epoll_ctl EPERM per publish: $(grep 'epoll_ctl' "$f" | grep -c EPERM) / $n"
