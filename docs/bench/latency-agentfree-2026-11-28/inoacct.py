#!/usr/bin/env python3
"""Accounts inode frees and creations per process from `perf script` of
ext4:ext4_free_inode and ext4:ext4_allocate_inode (perf record -a -k mono),
with OFF = realtime - monotonic (seconds) taken just before the recording:
for each free, whether an allocation took the same inode within the same
wall-clock second (ext4's recently_deleted() does not skip an inode freed
in the current second), per process and per apply of the agent.

usage: inoacct.py PERF_SCRIPT_TXT OFF [GROUP_LO GROUP_HI]
"""
import collections, math, re, sys

IPG = 8192
txt, off = sys.argv[1], float(open(sys.argv[2]).read()) if not re.match(r'^-?[0-9.]+$', sys.argv[2]) else float(sys.argv[2])
glo = int(sys.argv[3]) if len(sys.argv) > 3 else None
ghi = int(sys.argv[4]) if len(sys.argv) > 4 else None
pat = re.compile(r'^\s*(\S+)\s+(\d+)\s+\[\d+\]\s+([\d.]+):\s+ext4:ext4_(free|allocate)_inode: dev \S+ ino (\d+)(?: dir (\d+))? mode (\d+)')
ev = []
for line in open(txt):
    m = pat.match(line)
    if not m:
        continue
    comm, pid, t, kind, ino, d, mode = m.groups()
    ino = int(ino)
    g = (ino - 1) // IPG
    if glo is not None and not (glo <= g <= ghi):
        continue
    ev.append((float(t) + off, comm, int(pid), kind, ino, mode))
ev.sort()
# next allocation of each inode after each free
allocs = collections.defaultdict(list)
for i, e in enumerate(ev):
    if e[3] == 'allocate':
        allocs[e[4]].append(i)
kinds = {'040700': 'dir', '040755': 'dir', '0120777': 'symlink'}
def kind_of(mode):
    if mode.startswith('04'):
        return 'dir'
    if mode.startswith('012'):
        return 'symlink'
    return 'file'
# per process
procs = collections.OrderedDict()
for i, (t, comm, pid, k, ino, mode) in enumerate(ev):
    p = procs.setdefault((comm, pid), {'first': t, 'last': t, 'alloc': collections.Counter(), 'free': collections.Counter(), 'reused': collections.Counter(), 'applies': 0, 'reuse_of_same_sec': 0, 'allocs_n': 0})
    p['last'] = t
    if k == 'allocate':
        p['alloc'][kind_of(mode)] += 1
        p['allocs_n'] += 1
        if mode == '040700':
            p.setdefault('gens', collections.Counter())[d] += 1
        # did it take an inode freed in this very second?
        j = i - 1
        took = False
        while j >= 0 and ev[j][0] >= math.floor(t):
            if ev[j][3] == 'free' and ev[j][4] == ino:
                took = True
                break
            j -= 1
        if took:
            p['reuse_of_same_sec'] += 1
    else:
        p['free'][kind_of(mode)] += 1
        sec = math.floor(t)
        for a in allocs.get(ino, []):
            if a > i:
                if math.floor(ev[a][0]) == sec:
                    p['reused'][kind_of(mode)] += 1
                break
print(f"events {len(ev)}, span {ev[0][0]:.0f}..{ev[-1][0]:.0f}")
print("| process | pid | life s | applies (generation directories made) | creations: file · dir · symlink | frees: file · dir · symlink | frees re-used the same second (file · dir · symlink) | residual frees | creations that took a same-second free |")
print("|---|---:|---:|---:|---|---|---:|---:|---:|")
for (comm, pid), p in procs.items():
    p['applies'] = sum(v for v in p.get('gens', {}).values() if v > 5)
    if sum(p['alloc'].values()) + sum(p['free'].values()) < 10:
        continue
    a, f, r = p['alloc'], p['free'], p['reused']
    print(f"| {comm} | {pid} | {p['last']-p['first']:.1f} | {p['applies']} | {a['file']} · {a['dir']} · {a['symlink']} | {f['file']} · {f['dir']} · {f['symlink']} | {sum(r.values())} of {sum(f.values())} ({r['file']} · {r['dir']} · {r['symlink']}) | {sum(f.values())-sum(r.values())} | {p['reuse_of_same_sec']} of {p['allocs_n']} |")
