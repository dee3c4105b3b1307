import sys, collections
# ksys.py MS CLASS: for cls3's CLASS, split samples by the syscall entry (__x64_sys_*) or 'user'
src=open(__import__('os').path.join(__import__('os').path.dirname(__file__), '..', 'latency-agentfive-2026-11-27', 'cls3.py')).read().split('c=collections.Counter()')[0]
ns={}; exec(src,ns); cls=ns['cls']
ms=float(sys.argv[1]); want=sys.argv[2]
c=collections.Counter(); alls=0; fr=[]
def fl():
    global fr,alls
    if fr:
        alls+=1
        if want=='*' or cls(fr)==want:
            s=[f for f in fr if f.startswith(('__x64_sys_','__do_sys','io_','ksys_'))]
            k = s[-1] if s else ('kernel-other' if any('[k]' in f for f in fr) else 'user/other')
            c[k]+=1
    fr=[]
for l in sys.stdin:
    if not l.strip() or l[0] not in ' \t': fl(); continue
    fr.append(l.split()[1].split('+')[0])
fl()
for k,v in c.most_common(25): print(f"{ms*v/alls:6.3f} {k}")
