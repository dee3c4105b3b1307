import json,sys
for f in sys.argv[1:]:
  r=json.load(open(f))
  print(f, 'seconds %.0f'%r['seconds'], 'load %.2f→%.2f'%(r['environment']['load_average_start'],r['environment']['load_average_end']))
  for s in r['sets']:
    row=lambda rows,fo:[x for x in rows if x['follower']==fo and x['publisher']=='in-process'][0]['ack_to_rendered']['p50_ms']
    a=row(s['rows'],'confagent dir'); c=row(s['rows'],'confd-style')
    at=row(s['rows'],'confagent template'); ct=row(s['rows'],'confd-style template')
    p=s.get('apply_independent')
    line='%3d/%-3d %2dk all: %6.1f/%6.1f=%.2fx tmpl %.2fx load %.1f-%.1f cpu %.1f/%.1f' % (s['items'],s['changed'],s['size']//1024,a,c,a/c,at/ct,s['load_average_start'],s['load_average_end'],s['agent_cpu_ms_per_publish'],s['confd_cpu_ms_per_publish'])
    if p:
      b=row(p['rows'],'confagent dir'); d=row(p['rows'],'confd-style')
      bt=row(p['rows'],'confagent template'); dt=row(p['rows'],'confd-style template')
      line+=' | indep: %6.1f/%6.1f=%.2fx tmpl %.2fx load %.1f-%.1f cpu %.1f/%.1f %.0fs' % (b,d,b/d,bt/dt,p['load_average_start'],p['load_average_end'],p['agent_cpu_ms_per_publish'],p['confd_cpu_ms_per_publish'],p['seconds'])
    print(line)
