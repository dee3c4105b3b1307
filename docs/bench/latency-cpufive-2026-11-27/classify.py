import sys, collections
# perf script output -> shares by class (first matching frame from leaf, with overrides)
def cls(frames):
    fs = frames
    if any(f.startswith(('runtime.gcBgMarkWorker','runtime.gcStart','runtime.bgscavenge','runtime.gcMarkDone','runtime.bgsweep','runtime.gcAssistAlloc','runtime.markroot')) for f in fs): return 'GC'
    if any('runtime.sysmon' in f for f in fs): return 'sysmon'
    for f in fs:
        if 'zkconf/cache.(*stateStore)' in f or 'zkconf/cache.datasyncClose' in f or 'zkconf/cache.(*Cache).persist' in f: return 'persist (cache state store)'
        if 'zkconf/internal/durable.' in f: return 'render: durable writes/fsyncs (internal/durable)'
        if 'zkconf/internal/template.' in f: return 'template execution'
        if 'zkconf/internal/render.' in f or 'agent.(*Renderer)' in f or 'agent.(*target)' in f or 'agent.stageAll' in f or 'agent.commitAll' in f: return 'render: stage, swap, sweep'
        if 'agent.(*driftWatcher)' in f or 'fsnotify' in f: return 'drift watcher'
        if 'go-zookeeper/zk.' in f or 'zkconf/zkclient.' in f: return 'ZooKeeper client'
        if 'zkconf/cache.' in f or 'zkconf/manifest.' in f: return 'cache reads/install'
        if 'zkconf/agent.(*statusNode)' in f: return 'status node'
        if 'zkconf/agent.' in f: return 'agent loop, status, metrics'
        if 'zkconf/' in f: return 'other zkconf'
    for f in fs:
        if f.startswith(('runtime.findRunnable','runtime.schedule','runtime.park_m','runtime.mcall','runtime.stopm','runtime.startm','runtime.handoffp','runtime.exitsyscall','runtime.entersyscall','runtime.wakep','runtime.netpoll')): return 'scheduler, poller'
    for f in fs:
        if f.startswith('runtime.'): return 'runtime other'
    return 'other'
counts=collections.Counter(); total=0; frames=[]; ins=False
def flush():
    global total, frames
    if frames: counts[cls(frames)]+=1; total+=1
    frames=[]
for line in sys.stdin:
    if not line.strip(): flush(); ins=False; continue
    if line[0] not in ' \t': flush(); ins=True; continue
    p=line.split()
    if len(p)>=2: frames.append(p[1])
flush()
cpu=float(sys.argv[1]) if len(sys.argv)>1 else 0
for k,v in counts.most_common():
    print(f"{k:50s} {100*v/total:5.1f}%  {cpu*v/total:5.2f} ms")
print("samples", total)
