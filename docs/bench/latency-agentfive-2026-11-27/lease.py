import os, fcntl, subprocess, time, mmap, errno, sys
F_SETLEASE=1024; F_WRLCK=fcntl.F_WRLCK; F_UNLCK=fcntl.F_UNLCK
def trylease(p):
    fd=os.open(p, os.O_RDONLY)
    try:
        fcntl.fcntl(fd, F_SETLEASE, F_WRLCK); fcntl.fcntl(fd, F_SETLEASE, F_UNLCK); return 'granted'
    except OSError as e: return 'refused '+errno.errorcode[e.errno]
    finally: os.close(fd)
def case(name, holder):
    p=f'/tmp/agentfive/lease/f-{name}'
    with open(p,'w') as f: f.write('old generation\n')
    h=subprocess.Popen([sys.executable,'-c',holder,p], stdout=subprocess.PIPE, text=True) if holder else None
    if h: h.stdout.readline()  # holder ready
    r=trylease(p)
    print(f'{name:40s} {r}')
    if h: h.kill(); h.wait()
    os.unlink(p)
case('no other holder', None)
case('other process: O_RDONLY fd', 'import os,sys,time; fd=os.open(sys.argv[1],os.O_RDONLY); print("ok",flush=True); time.sleep(30)')
case('other process: mmap, fd closed', 'import os,sys,time,mmap; fd=os.open(sys.argv[1],os.O_RDONLY); m=mmap.mmap(fd,0,prot=mmap.PROT_READ); os.close(fd); print("ok",flush=True); time.sleep(30)')
case('other process: O_PATH fd only', 'import os,sys,time; fd=os.open(sys.argv[1],os.O_PATH); print("ok",flush=True); time.sleep(30)')
case('other process: fd inherited then exec', 'import os,sys; fd=os.open(sys.argv[1],os.O_RDONLY); os.set_inheritable(fd,True); print("ok",flush=True); os.execvp("sleep",["sleep","30"])')
# same process, second fd
p='/tmp/agentfive/lease/f-self'; open(p,'w').write('x'); fd2=os.open(p,os.O_RDONLY); print(f'{"own second fd (the agent itself)":40s} {trylease(p)}'); os.close(fd2); os.unlink(p)
