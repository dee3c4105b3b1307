import collections,sys,re
# usage: attr.py perf-script.txt NRUNS
txt=open(sys.argv[1]).read().split('\n\n'); nruns=int(sys.argv[2])
def sym(l):
  l=l.strip().split(' ',1)
  return l[1].rsplit(' (',1)[0].split('+0x')[0] if len(l)>1 else l[0]
phase=collections.Counter(); sub=collections.Counter(); stk=collections.Counter(); n=0
for s in txt:
  ls=[l for l in s.split('\n') if l.strip()]
  if len(ls)<2: continue
  fr=[sym(l) for l in ls[1:]]; n+=1
  r=list(reversed(fr))  # outermost first
  ms=any(f in('runtime.morestack','runtime.newstack') for f in fr)
  if ms: stk['stack growth (inclusive)']+=1
  if any('page_fault' in f for f in fr): stk['page faults (inclusive)']+=1
  if any(f.startswith('runtime.mallocgc') for f in fr): stk['mallocgc (inclusive)']+=1
  key=None
  if not any(('.' in f and not f.startswith('_') and ('runtime' in f or 'main' in f or '/' in f)) for f in fr if not f.startswith('0x')) and not any(f.startswith(('runtime.','main.','github.com','internal/','sync','os.','syscall','net.','crypto','encoding','fmt','time','strings','bytes','slices','reflect','io')) for f in fr):
    key='kernel only (exec, exit, faults w/o Go frame)'
  elif any('doInit1' in f for f in r):
    i=[j for j,f in enumerate(r) if 'doInit1' in f][-1]
    pk=r[i+1] if i+1<len(r) else '?'
    pk=re.sub(r'\.(init|map\.init).*','',pk)
    key='init'; sub['init '+pk]+=1
  elif any(f in('runtime.rt0_go','runtime.schedinit','runtime.mallocinit','runtime.args','runtime.osinit') for f in r) and not any(f=='runtime.main' for f in r):
    key='runtime start'
  elif any(f.startswith('runtime.sysmon') for f in r): key='sysmon'
  elif any(f.startswith(('runtime.gcBgMarkWorker','runtime.gcStart','runtime.bgsweep','runtime.bgscavenge','runtime.gcMark','runtime.markroot')) for f in r): key='gc'
  elif any('rootCommand' in f for f in r): key='cobra tree build (rootCommand)'
  elif any(f=='main.(*app).configure' for f in r): key='configure (viper, flags)'
  elif any(f.startswith('main.(*app).loadInput') or f.startswith('main.loadInput') or 'readDir' in f for f in r): key='read/hash input'
  elif any('go-zookeeper' in f for f in r): key='go-zookeeper loops'
  else:
    for f in r:
      if f.startswith('main.') and f not in('main.main','main.run','main.runIO'):
        key='main '+f; break
      if f.startswith('github.com/zkconf') or f.startswith('github.com/spf13'):
        key='lib '+f; break
    if key is None:
      # goroutine without zkconf frames
      k=[f for f in r if f.startswith('runtime.') and f not in('runtime.goexit','runtime.mcall','runtime.mstart','runtime.mstart0','runtime.mstart1')]
      key='other '+(r[0] if not k else k[0])
  phase[key]+=1
print('samples',n,'per run',n/nruns)
for k,v in phase.most_common(45): print('%6.1f %5.1f%% %s'%(v/nruns,100*v/n,k))
print('--')
for k,v in stk.most_common(): print('%6.1f %5.1f%% %s'%(v/nruns,100*v/n,k))
print('-- init by package')
for k,v in sub.most_common(25): print('%6.1f %5.1f%% %s'%(v/nruns,100*v/n,k))
