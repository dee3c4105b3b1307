# Disk probe: what the agent's durable steps at 20/20 x 64 KiB cost alone and together.
import os, threading, time, statistics, sys
base = sys.argv[1] if len(sys.argv) > 1 else "/tmp/dironly-probe/d"
os.makedirs(base, exist_ok=True)
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 15
item = os.urandom(64 << 10)
tbuf = os.urandom(1700 * 1024)
pack = os.path.join(base, "pack")
open(pack, "wb").close()

def pack_append():
    with open(pack, "ab") as f:
        f.write(item * 20)
        f.flush()
        os.fdatasync(f.fileno())

def dir_files(n):
    d = os.path.join(base, "gen-%d" % n)
    os.mkdir(d)
    def one(i):
        fd = os.open(os.path.join(d, "item-%02d" % i), os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, item)
        os.fsync(fd)
        os.close(fd)
    ts = [threading.Thread(target=one, args=(i,)) for i in range(20)]
    [t.start() for t in ts]; [t.join() for t in ts]
    fd = os.open(d, os.O_RDONLY); os.fsync(fd); os.close(fd)

def template(n):
    p = os.path.join(base, ".tmpl-%d" % n)
    with open(p, "wb") as f:
        f.write(tbuf)
        f.flush()
        os.fsync(f.fileno())
    os.replace(p, os.path.join(base, "all.conf"))

def together(*fs):
    ts = [threading.Thread(target=f) for f in fs]
    [t.start() for t in ts]; [t.join() for t in ts]

n = [0]
def nxt():
    n[0] += 1
    return n[0]

cases = {
    "pack 1.3 MB append+fdatasync": lambda: pack_append(),
    "dir 20x64 KiB files fsynced in parallel + dir fsync": lambda: dir_files(nxt()),
    "template 1.7 MB write+fsync+rename": lambda: template(nxt()),
    "pack || dir (apply: independent, dir's wait)": lambda: together(pack_append, lambda: dir_files(nxt())),
    "pack || dir || template (apply: all, dir's wait)": lambda: together(pack_append, lambda: dir_files(nxt()), lambda: template(nxt())),
}
res = {k: [] for k in cases}
for r in range(reps):
    for k, f in cases.items():  # alternated
        t = time.perf_counter(); f(); res[k].append((time.perf_counter() - t) * 1000)
for k, v in res.items():
    v.sort()
    print("%-55s p50 %6.1f  p90 %6.1f ms" % (k, statistics.median(v), v[int(0.9 * (len(v) - 1))]))
import shutil; shutil.rmtree(base)
