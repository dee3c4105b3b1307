import json,glob,sys,os
rows=[]
for f in sorted(glob.glob(sys.argv[1]+'/*/latency-results.json')):
    d=json.load(open(f)); v=os.path.basename(os.path.dirname(f))
    for s in d['sets']:
        b=s['inode_probe_before']['create']; a=s['inode_probe_after']['create']
        r=[x for x in s['rows'] if x.get('follower')=='confagent dir' or 'dir' in str(x.get('follower',''))]
        print(v, (s['items'],s['changed'],s['size']), 'probe %.3f->%.3f'%(b['p50_ms'],a['p50_ms']), 'cpu %.2f / %.2f = %.2f'%(s['agent_cpu_ms_per_publish'], s['confd_cpu_ms_per_publish'], s['cpu_ratio']), 'load %.1f'%s['load_average_start'])
