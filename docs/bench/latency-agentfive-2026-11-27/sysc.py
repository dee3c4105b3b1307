import sys, collections, re
# sysc.py NAPPLIES: perf script of raw_syscalls:sys_enter -g -> per-apply counts by (syscall, first zkconf/os caller)
names={}
for l in open('/usr/include/x86_64-linux-gnu/asm/unistd_64.h'):
    m=re.match(r'#define __NR_(\w+) (\d+)',l)
    if m: names[int(m.group(2))]=m.group(1)
n=float(sys.argv[1]); c=collections.Counter(); bysc=collections.Counter(); cur=None; fr=[]
def fl():
    global cur, fr
    if cur is not None:
        site='?'
        for f in fr:
            if 'zkconf/' in f or 'fsnotify' in f or 'go-zookeeper' in f or f.startswith('runtime.') and f not in ('runtime.futex','runtime.usleep','runtime.nanotime1','runtime.write1','runtime.read','runtime.netpoll','runtime.futexsleep','runtime.futexwakeup','runtime.osyield','runtime.usleep.abi0','runtime.futex.abi0','runtime.osyield.abi0','runtime.write1.abi0','runtime.read.abi0','runtime.madvise','runtime.madvise.abi0','runtime.nanosleep'):
                site=f.replace('github.com/zkconf/zkconf/',''); break
        c[(cur,site)]+=1; bysc[cur]+=1
    cur=None; fr=[]
for l in sys.stdin:
    if not l.strip(): fl(); continue
    if l[0] not in ' \t':
        fl(); m=re.search(r'NR (\d+)',l); cur=names.get(int(m.group(1)),m.group(1)) if m else '?'; continue
    p=l.split(); 
    if len(p)>=2: fr.append(p[1].split('+')[0])
fl()
for sc,v in bysc.most_common():
    print(f"{sc:18s} {v/n:7.1f}")
    for (s2,site),v2 in c.most_common():
        if s2==sc and v2/n>=0.3: print(f"      {v2/n:6.1f}  {site}")
print("total", sum(bysc.values())/n)
