// Command zkfloor is the floor `confbench latency` compares `confpush
// publish` with: the least a program can do to publish, as a process of its
// own, so that its start-up is measured as confpush's is.
//
//	zkfloor --zk HOSTS --root PATH --items P1,P2 --checks P1,P2 --create PATH --root-bytes N --item-bytes N
//	zkfloor start
//
// The first connects (a session's creation: one server write), sends one
// Multi (the operations of a publish's commit: the root's data, the
// changed items' data, a Check of each departing content's blob, the
// history entry's Create: one server write) and closes (the session's
// close: one server write), then prints one JSON line with the time each
// of the three took, measured inside the process (session_ns: from
// zk.Connect to the session's establishment; multi_ns; close_ns). Its
// start → exit, less those, is what the process itself costs.
//
// start exits at once: the start-up of a Go program this size (process
// creation, runtime and package initialisation, exit).
//
// It imports go-zookeeper and the standard library only (no template
// engine, no zkconf package), so that neither of them is in the floor.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// Timings are what zkfloor prints: nanoseconds of each server write.
type Timings struct {
	Session int64 `json:"session_ns"`
	Multi   int64 `json:"multi_ns"`
	Close   int64 `json:"close_ns"`
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && args[0] == "start" {
		return 0
	}
	t, err := floor(args, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "zkfloor: %v\n", err)
		return 1
	}
	if err := json.NewEncoder(stdout).Encode(t); err != nil {
		fmt.Fprintf(stderr, "zkfloor: %v\n", err)
		return 1
	}
	return 0
}

// floor connects, sends one Multi and closes.
func floor(args []string, stderr io.Writer) (Timings, error) {
	fs := flag.NewFlagSet("zkfloor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		servers   = fs.String("zk", "", "ZooKeeper servers")
		root      = fs.String("root", "", "node whose data is set (the root)")
		items     = fs.String("items", "", "nodes whose data is set (the changed items), comma-separated")
		checks    = fs.String("checks", "", "nodes checked to exist (the departing contents' blobs), comma-separated")
		create    = fs.String("create", "", "node created (a history entry)")
		rootBytes = fs.Int("root-bytes", 2048, "bytes written to the root and the created node (a manifest)")
		itemBytes = fs.Int("item-bytes", 1024, "bytes written to each item")
	)
	var t Timings
	if err := fs.Parse(args); err != nil {
		return t, err
	}
	if *servers == "" || *root == "" || *items == "" || *create == "" {
		return t, errors.New("--zk, --root, --items and --create are required")
	}
	manifestData := bytes.Repeat([]byte("m"), *rootBytes)
	ops := []any{&zk.SetDataRequest{Path: *root, Data: manifestData, Version: -1}}
	item := bytes.Repeat([]byte("i"), *itemBytes)
	for _, p := range strings.Split(*items, ",") {
		ops = append(ops, &zk.SetDataRequest{Path: p, Data: item, Version: -1})
	}
	if *checks != "" {
		for _, p := range strings.Split(*checks, ",") {
			ops = append(ops, &zk.CheckVersionRequest{Path: p, Version: -1})
		}
	}
	ops = append(ops, &zk.CreateRequest{Path: *create, Data: manifestData, Acl: zk.WorldACL(zk.PermAll)})

	start := time.Now()
	conn, events, err := zk.Connect(strings.Split(*servers, ","), 30*time.Second,
		zk.WithLogger(discard{}), zk.WithLogInfo(false))
	if err != nil {
		return t, err
	}
	// The Multi would wait for the session anyway; waiting for it here
	// splits the two server writes.
	timeout := time.After(30 * time.Second)
	for established := false; !established; {
		select {
		case ev := <-events:
			established = ev.State == zk.StateHasSession
		case <-timeout:
			conn.Close()
			return t, errors.New("no session within 30 s")
		}
	}
	t.Session = int64(time.Since(start))
	start = time.Now()
	_, err = conn.Multi(ops...)
	t.Multi = int64(time.Since(start))
	start = time.Now()
	conn.Close()
	t.Close = int64(time.Since(start))
	return t, err
}

type discard struct{}

func (discard) Printf(string, ...any) {}
