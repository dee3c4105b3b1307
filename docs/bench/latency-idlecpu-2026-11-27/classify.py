import sys, collections
# classify perf script samples by the first matching frame (searching from the leaf up)
rules = [
 ("sysmon", "runtime.sysmon"),
 ("gc-bg", "runtime.gcBgMarkWorker"),
 ("drift-repair", "agent.(*Renderer).Repair"),
 ("drift-loop", "agent.(*driftWatcher)"),
 ("fsnotify", "fsnotify"),
 ("sweep", "agent.(*Renderer).sweepRetired"),
 ("statusnode", "agent.(*statusNode)"),
 ("publishStatus", "agent.(*Daemon).publishStatus"),
 ("logTimings", "agent.(*Daemon).logTimings"),
 ("memlimit", "agent.(*memLimiter)"),
 ("drift.watch", "watchdirs"),
 ("stageDir", "agent.(*target).stageDir"),
 ("stageFile", "agent.(*target).stageFile"),
 ("stage-other", "agent.(*target).stage"),
 ("commit", "agent.commitAll"),
 ("persist", "cache.(*Cache).persist"),
 ("cache-fetch", "cache.(*Cache).fetch"),
 ("cache-other", "cache."),
 ("render-other", "agent.(*Renderer)"),
 ("daemon-other", "agent.(*Daemon)"),
 ("zk-recv", "zk.(*Conn).recvLoop"),
 ("zk-send", "zk.(*Conn).sendLoop"),
 ("zk-other", "go-zookeeper"),
 ("slog", "log/slog"),
 ("prom/http", "prometheus"),
 ("timer/sched", "runtime.schedule"),
 ("park", "runtime.park_m"),
 ("mstart", "runtime.mstart"),
]
counts = collections.Counter(); total = 0
samples = sys.stdin.read().split("\n\n")
detail = collections.defaultdict(collections.Counter)
for s in samples:
    lines = [l.strip() for l in s.strip().split("\n") if l.strip()]
    if len(lines) < 2: continue
    frames = lines[1:]
    total += 1
    cls = "other"
    for name, pat in rules:
        if any(pat in f for f in frames):
            cls = name; break
    counts[cls] += 1
    leaf = frames[-1].split()[1] if len(frames[-1].split())>1 else frames[-1]
    # record the outermost go frame for 'other'
    if cls in ("other","mstart","park","timer/sched"):
        detail[cls][" <- ".join(f.split()[1].split("+")[0] for f in frames[:1]) + " | " + " <- ".join(f.split()[1].split("+")[0] for f in frames[-4:])] += 1
print("total", total)
for k, v in counts.most_common():
    print(f"{k:16s} {v:5d} {100*v/total:5.1f}%")
if len(sys.argv)>1:
  for c in detail:
    print("==", c)
    for k, v in detail[c].most_common(15): print(v, k)
