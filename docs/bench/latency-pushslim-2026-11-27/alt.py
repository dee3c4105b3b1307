#!/usr/bin/env python3
# Alternate binaries; per run read the child's rusage (CPU user+sys, minor faults) and wall.
import os, sys, time, statistics, random, subprocess
mode, n = sys.argv[1], int(sys.argv[2]); bins = sys.argv[3:]
zk = open('/tmp/pushslim-bin/zkdev.out').read().strip()
res = {b: [] for b in bins}
for i in range(n):
    order = bins if i % 2 == 0 else bins[::-1]
    for b in order:
        if mode == 'version':
            args = [b, '--version'] if 'zkfloor' not in b else [b, 'start']
        else:
            with open('/tmp/pushslim-bin/set/item01.conf', 'w') as f: f.write('x%d-%s' % (i, os.path.basename(b)) * 50)
            args = [b, '--zk', zk, '--root', '/bench/p', 'publish', '/tmp/pushslim-bin/set', '--allow-open', '--force']
        t0 = time.monotonic()
        p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.monotonic() - t0
        if status != 0: print('fail', b, status, file=sys.stderr)
        res[b].append(((ru.ru_utime + ru.ru_stime) * 1000, ru.ru_minflt, wall * 1000))
load = open('/proc/loadavg').read().split()[0]
for b in bins:
    c = [x[0] for x in res[b]]; f = [x[1] for x in res[b]]; w = [x[2] for x in res[b]]
    print('%-40s n=%d CPU p50 %.1f ms  faults p50 %d  wall p50 %.1f ms  (load at end %s)' % (b, len(c), statistics.median(c), statistics.median(f), statistics.median(w), load))
