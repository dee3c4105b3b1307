import sys, re
# gaps.py: busy periods (syscalls closer than 15 ms) of a strace -f -tt file: start, length, syscalls, nanosleeps
ev=[]
for l in open(sys.argv[1]):
    p=l.split(None,3)
    if len(p)<3: continue
    m=re.match(r'(\d+):(\d+):([\d.]+)',p[1])
    if not m: continue
    t=int(m.group(1))*3600+int(m.group(2))*60+float(m.group(3))
    name=p[2].split('(')[0]
    ev.append((t,name))
per=[]; cur=None
for t,n in ev:
    if cur and t-cur['end']<0.015: cur['end']=t; cur['n']+=1; cur['sl']+= n=='nanosleep'
    else:
        if cur: per.append(cur)
        cur={'start':t,'end':t,'n':1,'sl':int(n=='nanosleep')}
per.append(cur)
for c in per[10:40]:
    print(f"{c['start']%60:9.3f} len {1000*(c['end']-c['start']):6.1f} ms  calls {c['n']:4d}  nanosleep {c['sl']:3d}")
