import re,sys
def ts(s):
    h,m,x=s.split(':'); return (int(h)*3600+int(m)*60+float(x))*1000
rows=[];cur=None
for l in open(sys.argv[1]):
    m=re.match(r'(\d+)\s+(\S+)\s+(.*)',l)
    if not m: continue
    pid,t,rest=m.groups(); t=ts(t)
    if rest.startswith('pwritev('):
        if cur: rows.append(cur)
        cur={'t0':t}
    if cur is None: continue
    if rest.startswith('mkdirat(') and '..20' in rest and 'd0' not in cur: cur['d0']=t
    if rest.startswith('io_submit(') and 'sub' not in cur: cur['sub']=t
    if 'all.conf.zkconf-tmp' in rest and 'O_CREAT' in rest and 'tw' not in cur: cur['tw']=t
    if rest.startswith('renameat(') and '..data' in rest: cur['swap']=t
    if rest.startswith('renameat(') and 'all.conf' in rest: cur['tswap']=t
if cur: rows.append(cur)
import statistics as st
keys=['d0','sub','tw','swap','tswap']
vals={k:[] for k in keys}
for r in rows[2:]:
    for k in keys:
        if k in r: vals[k].append(r[k]-r['t0'])
for k in keys:
    v=vals[k]
    if v: print(f"{k:6s} n={len(v):3d} p50 {st.median(v):7.1f} ms after the pack's pwritev")
# order: fraction of applies where dir io_submit came before template tmp create
n=sum(1 for r in rows if 'sub' in r and 'tw' in r and r['sub']<r['tw']); print('dir submit before template write:',n,'of',sum(1 for r in rows if 'sub' in r and 'tw' in r))
