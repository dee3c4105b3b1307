//go:build ignore

// churn replays the dir target's inode traffic without the agent: every
// period, c new files are created in a pool directory (the refill) and the
// c files created grace earlier are removed (the sweep); beside it, a
// follower-like directory creates and removes fc files per period. It
// prints the mean time of one creation per 10 s, for both.
//
//	go run churn.go -parent /tmp/inorepro -c 100 -fc 2 -period 333ms -grace 5s -for 90s
//
// -shared puts the follower's files in the pool directory's group (the
// same directory) instead of a directory of its own.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

func mk(p string) time.Duration {
	s := time.Now()
	fd, err := syscall.Open(p, syscall.O_CREAT|syscall.O_EXCL|syscall.O_WRONLY|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		panic(err)
	}
	syscall.Close(fd)
	return time.Since(s)
}

func ino(p string) uint64 {
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		panic(err)
	}
	return st.Ino
}

func main() {
	parent := flag.String("parent", "/tmp/inorepro", "parent (chattr +T)")
	c := flag.Int("c", 100, "files per period, pool")
	fc := flag.Int("fc", 2, "files per period, follower")
	period := flag.Duration("period", 333*time.Millisecond, "period")
	grace := flag.Duration("grace", 5*time.Second, "removal delay, pool")
	dur := flag.Duration("for", 90*time.Second, "run time")
	freeFirst := flag.Bool("free-first", false, "remove the expired files before creating the period's (the agent's sweep, then its refill) instead of after")
	shared := flag.Bool("shared", false, "follower's files in the pool directory")
	flag.Parse()
	stamp := time.Now().UnixNano()
	pool := filepath.Join(*parent, fmt.Sprintf("pool-%d", stamp))
	fol := filepath.Join(*parent, fmt.Sprintf("fol-%d", stamp))
	for _, d := range []string{pool, fol} {
		if err := os.Mkdir(d, 0o755); err != nil {
			panic(err)
		}
	}
	if *shared {
		fol = pool
	}
	const ipg = 8192
	fmt.Printf("pool dir group %d, follower dir group %d\n", (ino(pool)-1)/ipg, (ino(fol)-1)/ipg)
	lag := int(*grace / *period)
	start := time.Now()
	var pSum, fSum time.Duration
	var pN, fN int
	next := start.Add(10 * time.Second)
	for r := 0; time.Since(start) < *dur; r++ {
		t0 := time.Now()
		sweep := func() {
			if old := r - lag; old >= 0 {
				for j := range *c {
					os.Remove(filepath.Join(pool, fmt.Sprintf("g%d-%d", old, j)))
				}
			}
		}
		if *freeFirst {
			sweep()
		}
		for j := range *c {
			pSum += mk(filepath.Join(pool, fmt.Sprintf("g%d-%d", r, j)))
			pN++
		}
		if !*freeFirst {
			sweep()
		}
		for j := range *fc {
			p := filepath.Join(fol, fmt.Sprintf("f%d-%d", r, j))
			fSum += mk(p)
			fN++
			os.Remove(filepath.Join(fol, fmt.Sprintf("f%d-%d", r-1, j)))
		}
		if time.Now().After(next) {
			fmt.Printf("t=%3.0fs pool: %6.1f µs/create (%d)  follower: %6.1f µs/create (%d)  load %s\n",
				time.Since(start).Seconds(), float64(pSum)/float64(pN)/1e3, pN, float64(fSum)/float64(fN)/1e3, fN, loadavg())
			pSum, fSum, pN, fN = 0, 0, 0, 0
			next = next.Add(10 * time.Second)
		}
		if d := *period - time.Since(t0); d > 0 {
			time.Sleep(d)
		}
	}
	os.RemoveAll(pool)
	if !*shared {
		os.RemoveAll(fol)
	}
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	if len(b) > 14 {
		return string(b[:14])
	}
	return string(b)
}
