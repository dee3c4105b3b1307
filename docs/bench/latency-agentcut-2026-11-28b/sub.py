import sys, collections
# sub.py MS PATTERN: samples whose stack contains PATTERN, split by a second-level marker list
pat=sys.argv[2]; ms=float(sys.argv[1])
marks=['Refill','Sweep','blkdev_issue_discard','ext4_free_blocks','ext4_truncate','recently_deleted','find_inode_bit','__ext4_new_inode','ext4_evict_inode','evict','do_unlinkat','do_mknodat','removeAllFrom','getdents','do_rmdir','openat','ext4_free_inode']
tot=0; c=collections.Counter(); fr=[]; alls=0
def fl():
    global fr,tot,alls
    if fr:
        alls+=1
        s=' '.join(fr)
        if pat in s:
            tot+=1
            for m in marks:
                if m in s: c[m]+=1
    fr=[]
for l in sys.stdin:
    if not l.strip() or l[0] not in ' \t': fl(); continue
    fr.append(l.split()[1].split('+')[0])
fl()
print(pat, f"{ms*tot/alls:.3f} ms")
for m in marks: print(f"  {m:24s} {ms*c[m]/alls:.3f} ms")
