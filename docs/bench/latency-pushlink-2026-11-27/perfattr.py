import collections,sys
txt=open(sys.argv[1]).read().split('\n\n')
def sym(l):
  l=l.strip(); p=l.split(' ',1)
  return (p[1].rsplit(' (',1)[0] if len(p)>1 else l).split('+0x')[0]
c=collections.Counter(); n=0
for s in txt:
  lines=[sym(l) for l in s.split('\n')[1:] if l.strip()]
  if not lines: continue
  n+=1
  r=list(reversed(lines))
  key=None
  if any('doInit1' in f for f in r): key='A init (package inits)'
  elif any(f.startswith('runtime.rt0_go') or f=='runtime.schedinit' for f in r): key='A runtime start'
  elif any(f.startswith('runtime.sysmon') for f in r): key='R sysmon'
  elif any(f.startswith('runtime.gcBgMarkWorker') or f.startswith('runtime.gcStart') or f.startswith('runtime.bgsweep') or f.startswith('runtime.bgscavenge') for f in r): key='R gc'
  else:
    for f in r:
      if f.startswith('main.') and f not in ('main.main','main.run','main.runIO') and 'publishCommand.func1' not in f:
        key='M '+f; break
      if 'publishCommand.func1' in f:
        # next frame
        i=r.index(f); key='P '+(r[i+1] if i+1<len(r) else 'self'); break
    if key is None:
      for f in r:
        if 'zkconf/zkconf' in f or 'go-zookeeper' in f or 'cobra' in f or 'viper' in f: key='G '+f; break
  if key is None: key='X '+(lines[0])
  c[key]+=1
print('samples',n)
for k,v in c.most_common(40): print('%5.1f%% %s'%(100*v/n,k))
