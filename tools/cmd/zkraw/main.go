// Command zkraw is the raw go-zookeeper follower `confbench latency`
// compares confagent with, a process of its own so that its CPU and memory
// are measured as the agent's are:
//
//	zkraw follow --zk HOSTS --root PATH --out FILE --template TMPL --template-out FILE
//
// follow is the confd-style follower: GetW on the root, decode the
// manifest, Get every item (all in flight at once on the one connection,
// as confd's backends issue them), then write FILE (a "gen=" line and
// every item) and render TMPL with text/template and sprig (the helpers
// of confagent's template targets: generation, names, item) into
// --template-out, each by write and rename: no verification, no fsync,
// no state. It runs until SIGTERM.
//
// After every render it logs one line to standard error,
//
//	zkraw timings {"generation":G,"event":NS,"root":NS,"items":NS,"written":NS}
//
// with the wall clock (unix ns) when the root's watch fired (0 for the
// first read), when the root's read was answered, when every item was in
// hand and when both files were written: the benchmark subtracts the
// publish's commit-ack, as it does from the agent's "applied" line.
//
// The floor of `confpush publish` is tools/cmd/zkfloor, a program of its
// own that links no template engine.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"text/template"
	"time"

	"github.com/Masterminds/sprig/v3"
	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/manifest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: zkraw follow [flags]")
		return 2
	}
	var err error
	switch args[0] {
	case "follow":
		err = follow(ctx, args[1:], stderr)
	default:
		fmt.Fprintf(stderr, "zkraw: unknown command %q (follow)\n", args[0])
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "zkraw %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

// connect dials servers without go-zookeeper's logging.
func connect(servers string) (*zk.Conn, error) {
	conn, _, err := zk.Connect(strings.Split(servers, ","), 30*time.Second,
		zk.WithLogger(discard{}), zk.WithLogInfo(false))
	return conn, err
}

type discard struct{}

func (discard) Printf(string, ...any) {}

// follow is the confd-style follower.
func follow(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("zkraw follow", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		servers = fs.String("zk", "", "ZooKeeper servers")
		root    = fs.String("root", "", "root to follow")
		out     = fs.String("out", "", "file of every item")
		tmpl    = fs.String("template", "", "template file (text/template with sprig)")
		tmplOut = fs.String("template-out", "", "the template's output")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *servers == "" || *root == "" || *out == "" || (*tmpl == "") != (*tmplOut == "") {
		return errors.New("--zk, --root and --out are required, --template and --template-out go together")
	}
	r := &renderer{}
	if *tmpl != "" {
		src, err := os.ReadFile(*tmpl)
		if err != nil {
			return err
		}
		r.tmpl, err = template.New("t").Funcs(sprig.TxtFuncMap()).Funcs(template.FuncMap{
			"generation": func() int64 { return r.gen },
			"names":      func() []string { return r.names },
			"item": func(n string) (string, error) {
				b, ok := r.items[n]
				if !ok {
					return "", fmt.Errorf("no item %q", n)
				}
				return string(b), nil
			},
		}).Parse(string(src))
		if err != nil {
			return err
		}
	}
	conn, err := connect(*servers)
	if err != nil {
		return err
	}
	defer conn.Close()
	log := slog.New(slog.NewTextHandler(stderr, nil))
	var event int64 // when the root's watch fired, unix ns
	for ctx.Err() == nil {
		data, _, ch, err := conn.GetW(*root)
		r.t = timeline{event: event, root: time.Now().UnixNano()}
		if err == nil {
			err = r.render(conn, *root, data, *out, *tmplOut)
		}
		if err == nil {
			r.t.written = time.Now().UnixNano()
			fmt.Fprintf(stderr, "zkraw timings {\"generation\":%d,\"event\":%d,\"root\":%d,\"items\":%d,\"written\":%d}\n",
				r.gen, r.t.event, r.t.root, r.t.items, r.t.written)
		}
		if err != nil {
			log.Warn("retrying", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		select {
		case <-ch:
			event = time.Now().UnixNano()
		case <-ctx.Done():
		}
	}
	return nil
}

// timeline is one render's instants (unix ns), logged after it.
type timeline struct {
	event, root, items, written int64
}

// renderer holds what the template's helpers read.
type renderer struct {
	tmpl  *template.Template
	t     timeline
	gen   int64
	names []string
	items map[string][]byte
}

// render reads every item the manifest names and writes out, then the
// template's output.
func (r *renderer) render(conn *zk.Conn, root string, data []byte, out, tmplOut string) error {
	m, err := manifest.Decode(data)
	if err != nil {
		return err
	}
	names := m.Names()
	vals := make([][]byte, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Go(func() { vals[i], _, errs[i] = conn.Get(root + "/" + n) })
	}
	wg.Wait()
	r.t.items = time.Now().UnixNano()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	r.gen = m.Generation
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "gen=%08d\n", m.Generation)
	for _, v := range vals {
		buf.Write(v)
	}
	if err := replace(out, buf.Bytes()); err != nil {
		return err
	}
	if r.tmpl == nil {
		return nil
	}
	r.names, r.items = names, make(map[string][]byte, len(names))
	for i, n := range names {
		r.items[n] = vals[i]
	}
	buf.Reset()
	if err := r.tmpl.Execute(&buf, nil); err != nil {
		return err
	}
	return replace(tmplOut, buf.Bytes())
}

// replace writes path by rename, without fsync (as confd does).
func replace(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
