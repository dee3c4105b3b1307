import re,sys,collections,math
off=float(open('/tmp/monooff').read())
ev=[]
for line in open(sys.argv[1]):
    m=re.match(r'\s*(\S+)\s+(\d+)\s+\[\d+\]\s+([\d.]+):\s+ext4:ext4_(free|allocate)_inode:.*?ino (\d+)',line)
    if not m: continue
    comm,pid,t,kind,ino=m.groups()
    ev.append((float(t)+off,comm,kind,int(ino)))
grp=int(sys.argv[2]) if len(sys.argv)>2 else None
ev=[e for e in ev if grp is None or (e[3]-1)//8192==grp]
# a free is residual if no allocation of the same ino in the same real second
allocs=collections.defaultdict(list)
for t,c,k,i in ev:
    if k=='allocate': allocs[i].append(t)
res=collections.Counter(); tot=collections.Counter(); alloc=collections.Counter()
for t,c,k,i in ev:
    if k=='allocate': alloc[c]+=1; continue
    tot[c]+=1
    s=math.floor(t)
    if not any(math.floor(a)==s and a>=t for a in allocs[i]): res[c]+=1
print('group',grp,'events',len(ev))
for c in sorted(set(tot)|set(alloc)): print('%-14s frees %6d residual %6d allocs %6d'%(c,tot[c],res[c],alloc[c]))
