import collections,statistics,re,sys
d=collections.defaultdict(list)
order=[]
for l in open(sys.argv[1]):
    m=re.search(r'DBG (\S+) (\d+)',l)
    if m:
        if m.group(1) not in d: order.append(m.group(1))
        d[m.group(1)].append(int(m.group(2)))
for w in sorted(order,key=lambda w: statistics.median(d[w])):
    v=d[w]
    print(f"{w:14s} n={len(v):4d} p50={statistics.median(v):7.0f} us")
