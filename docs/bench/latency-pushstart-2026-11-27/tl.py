import sys, re, glob, statistics
def ts(line):
    t = line.split()[1]; h,m,s = t.split(':'); return (int(h)*3600+int(m)*60+float(s))*1000
def parse(path):
    ev = {}; sock=None; lines=open(path).read().splitlines()
    multis=[]
    for l in lines:
        if 'execve(' in l and 'exec' not in ev: ev['exec']=ts(l)
        m = re.search(r'connect\((\d+), \{sa_family=AF_INET', l)
        if m and sock is None: sock=m.group(1); ev['connect']=ts(l)
        if sock is None: continue
        if re.search(r'write\(%s, "\\0\\0\\0,\\0\\0\\0\\0' % sock, l) and 'sess_w' not in ev: ev['sess_w']=ts(l)
        if re.search(r'read\(%s, "\\0\\0\\0\$' % sock, l) and 'sess_r' not in ev: ev['sess_r']=ts(l)
        if re.search(r'<\.\.\. read resumed>"\\0\\0\\0\$\\0\\0\\0\\0', l) and 'sess_r' not in ev: ev['sess_r']=ts(l)
        w = re.search(r'write\(%s, "(.{0,40})' % sock, l)
        if w and 'sess_w' in ev and not w.group(1).startswith('\\0\\0\\0,\\0\\0\\0\\0'):
            if re.search(r'\\0\\0\\0\\16\\0\\0\\0', w.group(1)) and re.search(r'= (\d+)$', l) and int(re.search(r'= (\d+)$', l).group(1))>1000 or '\\16\\0\\0\\0\\5' in w.group(1) or '\\16\\0\\0\\0\\1\\0' in w.group(1):
                multis.append(ts(l))
            elif '\\377\\377\\377\\365' in l: ev['close_w']=ts(l)
            else:
                ev.setdefault('req1', ts(l)); 
                if not multis: ev['reqlast']=ts(l)
        if re.search(r'write\(1, ', l) and 'out' not in ev: ev['out']=ts(l)
        if 'exit_group' in l and 'exitg' not in ev: ev['exitg']=ts(l)
        if '+++ exited' in l: ev['reaped']=ts(l)
    if multis: ev['commit_w']=multis[0]
    if len(multis)>1: ev['store_w']=multis[1]
    return ev
order=['exec','connect','sess_w','sess_r','req1','reqlast','commit_w','store_w','out','close_w','exitg','reaped']
for pat in sys.argv[1:]:
    runs=[parse(p) for p in sorted(glob.glob(pat))]
    print(pat, 'n=%d'%len(runs))
    for a,b in zip(order, order[1:]):
        pass
    prev='exec'
    for k in order[1:]:
        d=[r[k]-r[prev] for r in runs if k in r and prev in r]
        if not d: continue
        print('  %-9s -> %-9s p50 %7.2f ms (n=%d)'%(prev,k,statistics.median(d),len(d)))
        prev=k
    d=[r['reaped']-r['exec'] for r in runs if 'reaped' in r]
    print('  total p50 %.2f'%statistics.median(d))
