import sys, collections, importlib.util
# cls4.py MS: cls3's classes, each split into user (leaf frame in the binary) and kernel samples
src=open(__import__('os').path.join(__import__('os').path.dirname(__file__), '..', 'latency-agentfive-2026-11-27', 'cls3.py')).read().split('c=collections.Counter()')[0]
ns={}; exec(src,ns); cls=ns['cls']
c=collections.Counter(); u=collections.Counter(); tot=0; fr=[]; leafk=None
def fl():
    global fr,tot,leafk
    if fr:
        k=cls(fr); c[k]+=1; tot+=1
        if not leafk: u[k]+=1
    fr=[]; leafk=None
for l in sys.stdin:
    if not l.strip() or l[0] not in ' \t': fl(); continue
    p=l.split()
    if leafk is None: leafk = 'kernel' in l
    fr.append(p[1].split('+')[0])
fl()
ms=float(sys.argv[1])
print(f"{'class':52s} {'%':>5s} {'ms':>6s} {'user ms':>7s} {'kern ms':>7s}")
for k,v in c.most_common(): print(f"{k:52s} {100*v/tot:5.1f} {ms*v/tot:6.3f} {ms*u[k]/tot:7.3f} {ms*(v-u[k])/tot:7.3f}")
print('samples',tot, 'user', sum(u.values()))
