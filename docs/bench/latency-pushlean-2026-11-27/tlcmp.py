import sys,re,statistics as S
rows={}
for f in sys.argv[1:]:
  for line in open(f):
    name=line.split()[0]
    wall=float(re.search(r'wall=([\d.]+)',line).group(1))
    m=re.search(r'TL \[(.*)\]',line)
    if not m: continue
    d={}
    for kv in m.group(1).split():
        k,v=kv.split('=')
        if k not in d: d[k]=float(v)
    d['wait']=wall
    rows.setdefault(name,[]).append(d)
segs=[('exec','main'),('main','session'),('session','reads-done'),('reads-done','multi-send'),('multi-send','multi-ack'),('multi-ack','closed'),('closed','wait'),('exec','wait'),('session','multi-send')]
for name,rs in rows.items():
    out=[]
    for a,b in segs:
        v=[r.get(b,float('nan'))-(r.get(a,0.0) if a!='exec' else 0.0) for r in rs if (a=='exec' or a in r) and b in r]
        if v: out.append("%s→%s %.2f"%(a,b,S.median(v)))
    print(name,"n=%d"%len(rs)," | ".join(out))
