import sys,re,statistics as S
rows={}
for line in open(sys.argv[1]):
    name=line.split()[0]
    wall=float(re.search(r'wall=([\d.]+)',line).group(1))
    m=re.search(r'TL \[(.*)\]',line)
    if not m: continue
    marks=[]
    for kv in m.group(1).split():
        k,v=kv.split('='); marks.append((k,float(v)))
    rows.setdefault(name,[]).append((wall,marks))
for name,rs in rows.items():
    print(name, "n=%d wall p50 %.2f"%(len(rs), S.median([w for w,_ in rs])))
    # segments between consecutive distinct marks (first occurrence)
    segs={}
    order=[]
    for w,marks in rs:
        seen={}
        prev=('exec',0.0)
        for k,v in marks:
            if k in seen: k=k+'2'
            seen[k]=1
            key=prev[0]+'->'+k
            if key not in segs: order.append(key); segs[key]=[]
            segs[key].append(v-prev[1]); prev=(k,v)
        key=prev[0]+'->wait'
        if key not in segs: order.append(key); segs[key]=[]
        segs[key].append(w-prev[1])
    for k in order:
        v=segs[k]
        print("  %-30s n=%2d p50 %6.2f  mean %6.2f"%(k,len(v),S.median(v),S.mean(v)))
