import sys, collections
# cls3.py MS: common classes for agent and follower (whole sample incl. kernel frames), by outermost meaningful frame
def cls(fr):
    s=' '.join(fr)
    if any(f.startswith(('runtime.gcBgMarkWorker','runtime.gcStart','runtime.bgscavenge','runtime.gcMarkDone','runtime.bgsweep','runtime.gcAssistAlloc','runtime.markroot')) for f in fr): return 'GC'
    if 'runtime.sysmon' in s: return 'sysmon'
    if 'text/template' in s or 'internal/template.' in s or 'Target).Output' in s: return 'template render'
    if 'cache.(*stateStore)' in s or 'cache.datasyncClose' in s or 'Cache).persist' in s: return 'state pack (persist)'
    if 'Renderer).sweepLocked' in s: return 'dir: sweep + pool refill'
    if 'repairIn' in s: return 'dir: post-apply check (repairIn)'
    if 'DirWriter).prepare' in s: return 'dir: prepare (matchSet of current gen)'
    if 'stageDir' in s: return 'dir: stage (mkdir, link, pooled file, fsync)'
    if 'StagedDir).' in s: return 'dir: commit (swap, dir fsyncs)'
    if 'StagedFile).' in s or 'stageFile' in s or 'render.StageIfChanged' in s: return 'template file: stage+commit (temp, fsync, rename)'
    if 'main.replace' in s: return 'follower: write+rename (no fsync)'
    if 'github.com/fsnotify' in s or 'driftWatcher' in s: return 'drift watcher (inotify)'
    if 'go-zookeeper' in s or 'zkclient.' in s: return 'ZooKeeper client'
    if 'zkconf/cache.' in s or 'zkconf/manifest.' in s or 'main.(*renderer).render' in s: return 'cache/manifest reads'
    if 'zkconf/agent.' in s: return 'agent loop, status, log'
    if 'zkconf/' in s or 'main.' in s: return 'other program code'
    if any(f.startswith(('runtime.findRunnable','runtime.schedule','runtime.park_m','runtime.mcall','runtime.stopm','runtime.startm','runtime.handoffp','runtime.exitsyscall','runtime.entersyscall','runtime.wakep','runtime.netpoll','runtime.goexit0','runtime.mstart')) for f in fr): return 'scheduler, idle, poller'
    if any(f.startswith('runtime.') for f in fr): return 'runtime other'
    return 'kernel only (irq, fault)'
c=collections.Counter(); tot=0; fr=[]
def fl():
    global fr,tot
    if fr: c[cls(fr)]+=1; tot+=1
    fr=[]
for l in sys.stdin:
    if not l.strip() or l[0] not in ' \t': fl(); continue
    p=l.split(); fr.append(p[1].split('+')[0])
fl()
ms=float(sys.argv[1])
for k,v in c.most_common(): print(f"{k:52s} {100*v/tot:5.1f}% {ms*v/tot:6.3f} ms")
print('samples',tot)
