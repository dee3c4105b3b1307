// Command zkdev runs a throw-away standalone ZooKeeper on a free loopback
// port, for make demo: it prints the connection string on stdout, serves
// until SIGINT/SIGTERM, then removes the server and its data. It uses the
// same harness as the tests.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/zkconf/zkconf/internal/zktest"
)

// runner implements zktest.TB for a program.
type runner struct {
	cleanups []func()
	dirs     []string
}

func (r *runner) Helper() {}

func (r *runner) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "zkdev: "+format+"\n", args...)
	r.cleanup()
	os.Exit(1)
}

func (r *runner) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }

func (r *runner) TempDir() string {
	d, err := os.MkdirTemp("", "zkdev")
	if err != nil {
		r.Fatalf("%v", err)
	}
	r.dirs = append(r.dirs, d)
	return d
}

func (r *runner) cleanup() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
	for _, d := range r.dirs {
		os.RemoveAll(d)
	}
}

func main() {
	r := &runner{}
	c := zktest.StartWith(r, zktest.Options{Size: 1, TickTime: 500 * time.Millisecond})
	fmt.Println(c.ConnString())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	r.cleanup()
}
