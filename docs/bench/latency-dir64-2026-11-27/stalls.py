import re,sys
def ts(s):
    h,m,x=s.split(':'); return (int(h)*3600+int(m)*60+float(x))*1000
ev=[];start={}
L=[]
for l in open(sys.argv[1]):
    m=re.match(r'(\d+)\s+(\S+)\s+(.*)',l)
    if not m: continue
    pid,t,rest=m.groups(); t=ts(t); L.append((pid,t,rest))
    for name in ('fdatasync','io_getevents','fsync'):
        if rest.startswith(name+'(') and 'unfinished' in rest: start[pid]=(name,t)
        if rest.startswith('<... '+name+' resumed') and pid in start:
            n,t0=start.pop(pid); d=re.search(r'<([\d.]+)>\s*$',rest)
            if d and float(d.group(1))>0.005: ev.append((n,pid,t0,t))
# other threads' activity excluding sysmon-ish calls
quiet=('nanosleep','futex','epoll_pwait','<... nanosleep','<... futex','<... epoll','sched_yield','getpid','tgkill','---','rt_sigreturn')
import bisect
times=[x[1] for x in L]
for kind in ('fdatasync','io_getevents','fsync'):
    tot=0;busy=0;n=0
    for n_,pid,t0,t1 in ev:
        if n_!=kind: continue
        n+=1
        i=bisect.bisect_left(times,t0); j=bisect.bisect_right(times,t1)
        act=[x for x in L[i:j] if x[0]!=pid and not x[2].startswith(quiet)]
        # longest gap without other-thread activity
        ts_=[t0]+[x[1] for x in act]+[t1]
        gap=max(b-a for a,b in zip(ts_,ts_[1:]))
        tot+=t1-t0; busy+=gap
    if n: print(f"{kind:13s} >5ms: {n:3d}, mean {tot/n:6.1f} ms, mean longest stretch with no other thread's work {busy/n:6.1f} ms")
