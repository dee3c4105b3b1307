import sys, re, collections
rows=[]
for l in open(sys.argv[1]):
    m = re.match(r'(\d+)\s+(\d+):(\d+):(\d+\.\d+)\s+(.*)', l)
    if not m: continue
    t = int(m.group(2))*3600+int(m.group(3))*60+float(m.group(4))
    rest = m.group(5)
    mm = re.match(r"(<\.\.\. )?(\w+)", rest)
    if not mm: continue
    name = mm.group(2)
    rows.append((t, int(m.group(1)), name, rest))
gap = float(sys.argv[2]) if len(sys.argv)>2 else 0.005
per=[]; cur=None
for t,tid,name,rest in rows:
    if cur is None or t-cur['end']>gap:
        cur={'start':t,'end':t,'c':collections.Counter(),'n':0, 'first':rest[:90]}; per.append(cur)
    cur['end']=t; cur['c'][name]+=1; cur['n']+=1
t0=per[0]['start']
for p in per:
    top=", ".join(f"{k}:{v}" for k,v in p['c'].most_common(7))
    print(f"{(p['start']-t0)*1000:8.1f} +{(p['end']-p['start'])*1000:6.1f}ms n={p['n']:4d} {top} | {p['first']}")
