#!/usr/bin/env python3
"""For each creation by the given pids: was the inode freed in the same
wall-clock second, freed earlier in the trace (and how long before), or
never freed within the trace (an older hole or the never-used frontier)?
usage: inotake.py PERF_SCRIPT_TXT OFF PID..."""
import collections, math, re, sys
pat = re.compile(r'^\s*(\S+)\s+(\d+)\s+\[\d+\]\s+([\d.]+):\s+ext4:ext4_(free|allocate)_inode: dev \S+ ino (\d+)(?: dir (\d+))? mode (\d+)')
off = float(open(sys.argv[2]).read())
pids = set(int(p) for p in sys.argv[3:])
lastfree = {}
c = collections.Counter()
for line in open(sys.argv[1]):
    m = pat.match(line)
    if not m:
        continue
    comm, pid, t, k, ino, d, mode = m.groups()
    t = float(t) + off
    ino, pid = int(ino), int(pid)
    if k == 'free':
        lastfree[ino] = t
        continue
    if pid not in pids:
        continue
    f = lastfree.pop(ino, None)
    if f is None:
        c['never freed in the trace (older hole or frontier)'] += 1
    elif math.floor(f) == math.floor(t):
        c['freed this second'] += 1
    elif t - f < 60:
        c['freed 1-60 s before (recent: taken only when nothing else)'] += 1
    else:
        c['freed > 60 s before'] += 1
for k, v in c.most_common():
    print(f"{v:6d}  {k}")
