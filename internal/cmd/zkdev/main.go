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

func main() {
	c, stop, err := zktest.Launch(zktest.Options{Size: 1, TickTime: 500 * time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, "zkdev:", err)
		os.Exit(1)
	}
	fmt.Println(c.ConnString())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	stop()
}
