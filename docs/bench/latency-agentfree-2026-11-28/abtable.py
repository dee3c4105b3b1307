#!/usr/bin/env python3
"""Summarises the A/B runs of ab.sh: per run, the agent's and the
follower's CPU per publish by set, the inode probe, the load, and from the
ext4 tracepoints the agent's (comm "exe": confagent re-executes itself)
and the follower's (zkraw) frees not re-used within their second, per
apply (an apply = a generation directory created: a 0700 directory in
the dir target) and per follower file.
Only inodes of block group GROUP (env, default 300: /bx-agentfree's, a
top-level directory of its own) count: other helpers' agents are "exe"
too, in other groups.
usage: abtable.py DIR RUN..."""
import os
import collections, math, re, sys

d = sys.argv[1]
GROUP = int(os.environ.get('GROUP', '300'))
pat = re.compile(r'^\s*(\S+)\s+(\d+)\s+\[\d+\]\s+([\d.]+):\s+ext4:ext4_(free|allocate)_inode: dev \S+ ino (\d+)(?: dir (\d+))? mode (\d+)')

def residual(run):
    off = float(open(f'{d}/ino-{run}.off').read())
    ev = []
    for line in open(f'{d}/ino-{run}.txt'):
        m = pat.match(line)
        if m:
            c, p, t, k, i, _, mo = m.groups()
            if (int(i) - 1) // 8192 != GROUP:
                continue
            ev.append((float(t) + off, c, k, int(i), mo, _))
    ev.sort()
    nxt = {}
    reused = set()
    for j in range(len(ev) - 1, -1, -1):
        t, c, k, i, mo, _ = ev[j]
        if k == 'allocate':
            nxt[i] = t
        elif i in nxt and math.floor(nxt[i]) == math.floor(t):
            reused.add(j)
    n = collections.Counter()
    gens = collections.Counter()  # 0700 directories by parent: the dir target's generations
    for j, (t, c, k, i, mo, parent) in enumerate(ev):
        if c not in ('exe', 'zkraw'):
            continue
        if k == 'allocate':
            n[c, 'create'] += 1
            if c == 'exe' and mo == '040700':
                gens[parent] += 1
        else:
            n[c, 'free'] += 1
            if j not in reused:
                n[c, 'residual'] += 1
    # one generation directory per apply; each set's dir target is a
    # directory of its own
    n['exe', 'applies'] = sum(v for v in gens.values() if v > 5)
    return n

print('| run | UTC | load start → end | set | agent CPU ms | follower CPU ms | ratio | probe p50 before · after µs |')
print('|---|---|---|---|---:|---:|---:|---|')
res = []
for run in sys.argv[2:]:
    log = open(f'{d}/ino-{run}.log').read()
    t0 = re.search(r'^(\S+) load before: (\S+)', log, re.M)
    t1 = re.search(r'^(\S+) load after: (\S+)', log, re.M)
    cpu = dict((m.group(1), m.group(2, 3, 4)) for m in re.finditer(r'^\| (\d+/\d+ × \d+ KiB) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+)× \|', log, re.M))
    probe = dict((m.group(1), (m.group(2), m.group(3))) for m in re.finditer(r'^\| (\d+/\d+ × \d+ KiB) \| multi \| [^|]+\| [^|]+\| [^|]+\| (\d+) \| \d+ \| [^|]+\| (\d+) \|', log, re.M))
    for s, (a, f, r) in cpu.items():
        pb = probe.get(s, ('-', '-'))
        print(f'| {run} | {t0.group(1)} | {t0.group(2)} → {t1.group(2)} | {s} | {a} | {f} | {r}× | {pb[0]} · {pb[1]} |')
    res.append((run, residual(run)))
print()
print('| run | agent applies | agent creations · frees per apply | agent frees not re-used in their second, per apply | follower creations | follower frees not re-used, per creation |')
print('|---|---:|---|---:|---:|---:|')
for run, n in res:
    a = max(n['exe', 'applies'], 1)
    z = max(n['zkraw', 'create'], 1)
    print(f"| {run} | {n['exe','applies']} | {n['exe','create']/a:.1f} · {n['exe','free']/a:.1f} | {n['exe','residual']/a:.2f} | {n['zkraw','create']} | {n['zkraw','residual']/z:.2f} |")
