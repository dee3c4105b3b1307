//go:build ignore

// repro times file creations on ext4 after K inodes were freed, in the same
// directory or in a directory of another flex group (ext4 without a journal:
// find_inode_bit's recently_deleted scan). Run as root-less user is fine.
//
//	go run repro.go -parent /tmp/inorepro -k 0,500,5000 -n 200
//
// The parent gets chattr +T (EXT4_TOPDIR_FL) beforehand so that each trial's
// new directories are spread by Orlov over flex groups, as top-level
// directories are: each trial then starts in a flex group of its own.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const inodesPerGroup = 8192 // 16,777,216 inodes / 2,048 groups (df -i, size)
const flexSize = 16

func ino(p string) uint64 {
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		panic(err)
	}
	return st.Ino
}

func group(i uint64) uint64 { return (i - 1) / inodesPerGroup }

func sysCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Stime.Nano()) + time.Duration(ru.Utime.Nano())
}

func create(dir, prefix string, n int) ([]time.Duration, []uint64) {
	ds := make([]time.Duration, 0, n)
	inos := make([]uint64, 0, n)
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("%s-%d", prefix, i))
		s := time.Now()
		fd, err := syscall.Open(p, syscall.O_CREAT|syscall.O_EXCL|syscall.O_WRONLY|syscall.O_CLOEXEC, 0o644)
		if err != nil {
			panic(err)
		}
		syscall.Close(fd)
		ds = append(ds, time.Since(s))
		if i == 0 || i == n-1 {
			inos = append(inos, ino(p))
		}
	}
	return ds, inos
}

func remove(dir, prefix string, n int) {
	for i := range n {
		if err := os.Remove(filepath.Join(dir, fmt.Sprintf("%s-%d", prefix, i))); err != nil {
			panic(err)
		}
	}
}

func p50(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func main() {
	parent := flag.String("parent", "/tmp/inorepro", "parent directory (chattr +T)")
	ks := flag.String("k", "0,500,5000", "inodes freed before the creations")
	n := flag.Int("n", 200, "files created per trial")
	wait := flag.Duration("wait", 1500*time.Millisecond, "pause after the frees: ext4 counts a free as recent only once its dtime (seconds) is before now")
	where := flag.String("where", "same,other", "where the K inodes are freed: same (the creating directory) or other (a directory of another flex group)")
	flag.Parse()
	for _, w := range strings.Split(*where, ",") {
		for _, kk := range strings.Split(*ks, ",") {
			k, _ := strconv.Atoi(kk)
			stamp := time.Now().UnixNano()
			d := filepath.Join(*parent, fmt.Sprintf("d-%s-%d-%d", w, k, stamp))
			if err := os.Mkdir(d, 0o755); err != nil {
				panic(err)
			}
			f := d
			if w == "other" {
				// Directories made until one lands in another flex group.
				for i := 0; ; i++ {
					f = filepath.Join(*parent, fmt.Sprintf("f-%d-%d-%d", k, stamp, i))
					if err := os.Mkdir(f, 0o755); err != nil {
						panic(err)
					}
					if group(ino(f))/flexSize != group(ino(d))/flexSize {
						break
					}
				}
			}
			// Baseline: creations before anything was freed here.
			base, _ := create(d, "base", 20)
			remove(d, "base", 20) // 20 frees: part of every trial, K=0 included
			create(f, "k", k)
			remove(f, "k", k)
			time.Sleep(*wait)
			c0 := sysCPU()
			ds, inos := create(d, "t", *n)
			cpu := sysCPU() - c0
			var tot time.Duration
			for _, x := range ds {
				tot += x
			}
			fmt.Printf("where=%-5s K=%-5d dir ino %d group %d (flex %d) free-dir group %d (flex %d) | baseline p50 %6.1f µs | %d creates: p50 %7.1f µs, mean %7.1f µs, CPU/create %7.1f µs | inodes %v (groups %d..%d)\n",
				w, k, ino(d), group(ino(d)), group(ino(d))/flexSize, group(ino(f)), group(ino(f))/flexSize,
				float64(p50(base))/1e3, *n, float64(p50(ds))/1e3, float64(tot)/float64(len(ds))/1e3,
				float64(cpu)/float64(*n)/1e3, inos, group(inos[0]), group(inos[len(inos)-1]))
			remove(d, "t", *n)
		}
	}
}
