import re,sys,glob,collections
def classify(line):
    m=re.match(r'^\d+\s+(?:<\.\.\. )?(\w+)',line)
    if not m or 'resumed>' in line: return None
    call=m.group(1)
    if call.startswith('rename'):
        if re.search(r'"[^"]*/state/\.snapshot\.state\.tmp-\d+"', line) or 'snapshot.state"' in line: return (call,'state pointer rename')
        return (call,'render rename')
    pm=re.search(r'\(\d+<([^>]*)>',line)
    p=pm.group(1) if pm else ''
    if '/snapshot.state.d/pack-' in p: return (call,'state pack')
    if '/.snapshot.state.tmp-' in p: return (call,'state pointer tmp')
    if p.endswith('/snapshot.state.d'): return (call,'state item dir')
    if p.endswith('/state'): return (call,'state dir')
    return (call,'render')
for f in sys.argv[1:]:
    c=collections.Counter()
    for line in open(f):
        k=classify(line)
        if k: c[k]+=1
    writes=sum(v for (call,kind),v in c.items() if kind=='state pack')
    print(f"== {f}: {writes} state writes (pack syncs)")
    for (call,kind),v in sorted(c.items(), key=lambda x:(x[0][1],x[0][0])):
        print(f"  {kind:22s} {call:10s} {v:5d}  {v/max(writes,1):.2f}/write")
    st=sum(v for (call,kind),v in c.items() if kind.startswith('state'))
    print(f"  state total {st} = {st/max(writes,1):.2f} per write; all {sum(c.values())} = {sum(c.values())/max(writes,1):.2f} per write")
