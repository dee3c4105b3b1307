import sys,json
d=sys.argv[1]
rows=[json.loads(l) for l in open(d+"/confagent.log") if '"readtrace"' in l]
gens=sorted(r["gen"] for r in rows)
g0=gens[0]
sel=lambda g: g0+6<=g<=g0+35
rows=[r for r in rows if sel(r["gen"])]
def p(v):
  v=sorted(v); return "p50 %6.0f p10 %6.0f p90 %6.0f"%(v[len(v)//2],v[len(v)//10],v[9*len(v)//10])
print("agent n",len(rows))
for k in ["root_us","pre_us","first_us","last_us","done_us"]:
  print(" ",k,p([r[k] for r in rows]))
print("  first->last", p([r["last_us"]-r["first_us"] for r in rows]))
print("  pre->first", p([r["first_us"]-r["pre_us"] for r in rows]))
cr=[json.loads(l.split(" ",2)[2]) for l in open(d+"/confd-style.log") if l.startswith("zkraw timings")]
cr=[r for r in cr if sel(r["generation"])]
print("follower n",len(cr))
for a,b in [("event","root"),("root","items"),("items","written"),("event","items")]:
  print(" ",a,"->",b,p([(r[b]-r[a])/1000 for r in cr]))
