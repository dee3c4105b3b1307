import sys
# pair.py MS A B: ms of samples whose stack has both A and B
ms=float(sys.argv[1]); a=sys.argv[2]; b=sys.argv[3]; n=0; alls=0; fr=[]
def fl():
    global fr,n,alls
    if fr:
        alls+=1; s=' '.join(fr)
        if a in s and b in s: n+=1
    fr=[]
for l in sys.stdin:
    if not l.strip() or l[0] not in ' \t': fl(); continue
    fr.append(l.split()[1].split('+')[0])
fl(); print(f"{a} & {b}: {ms*n/alls:.3f} ms")
