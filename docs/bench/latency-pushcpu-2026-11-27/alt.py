# Alternated CPU and minor faults (rusage) of confpush publish binaries:
#   ZK=host:port python3 alt.py ROUNDS BIN...   (set: /tmp/pc/set, 20 x 1 KiB)
import os, sys, statistics
bins = sys.argv[2:]; n = int(sys.argv[1])
args = ["publish","--zk",os.environ["ZK"],"--root","/bench/p","--meta","/bench/m","--allow-open","--force","/tmp/pc/set"]
res = {b: ([], []) for b in bins}
for r in range(n):
    order = bins if r % 2 == 0 else bins[::-1]
    for b in order:
        pid = os.fork()
        if pid == 0:
            fd = os.open("/dev/null", os.O_WRONLY); os.dup2(fd, 1)
            os.execv(b, [b] + args)
        _, st, ru = os.wait4(pid, 0)
        assert st == 0, (b, st)
        res[b][0].append((ru.ru_utime + ru.ru_stime) * 1000); res[b][1].append(ru.ru_minflt)
for b in bins:
    c, f = res[b]
    print(f"{b}: CPU p50 {statistics.median(c):.1f} ms mean {statistics.mean(c):.1f}  faults p50 {statistics.median(f):.0f}  n={len(c)}")
