import re,sys,collections,math
off=float(open('/tmp/monooff').read())
ev=[]
for line in open(sys.argv[1]):
    m=re.match(r'\s*(\S+)\s+(\d+)\s+\[\d+\]\s+([\d.]+):\s+ext4:ext4_(free|allocate)_inode:.*?ino (\d+) .*?mode (\d+)',line)
    if not m: continue
    comm,pid,t,kind,ino,mode=m.groups()
    ev.append((float(t)+off,comm,kind,int(ino),mode))
grp=int(sys.argv[2]); who=sys.argv[3]
ev=[e for e in ev if (e[3]-1)//8192==grp]
allocs=collections.defaultdict(list)
for t,c,k,i,m in ev:
    if k=='allocate': allocs[i].append(t)
per=collections.OrderedDict()
for t,c,k,i,m in ev:
    if c!=who: continue
    s=math.floor(t)
    d=per.setdefault(s,[0,0,0])
    if k=='allocate': d[2]+=1; continue
    d[0]+=1
    if not any(math.floor(a)==s and a>=t for a in allocs[i]): d[1]+=1
t0=min(per)
for s,(f,r,a) in per.items(): print('%4d frees %4d residual %4d allocs %4d'%(s-t0,f,r,a))
