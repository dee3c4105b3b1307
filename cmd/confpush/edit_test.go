package main

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkconf/zkconf/internal/layout"
)

// runIn is run with stdin as standard input.
func (c cli) runIn(stdin io.Reader, args ...string) outcome {
	c.t.Helper()
	var out, errb bytes.Buffer
	full := append([]string{"--zk", c.zk, "--root", c.root, "--timeout", "60s", "--session-timeout", "10s"}, args...)
	code := runIO(full, stdin, &out, &errb)
	return outcome{code, out.String(), errb.String()}
}

// TestCLIPrune: a publish that would remove live items is refused (exit 2,
// the items listed, nothing written), dry run included, unless --prune.
func TestCLIPrune(t *testing.T) {
	srv := startZK(t)
	conn := srv.Connect(t, 10*time.Second)
	c := cli{t: t, zk: srv.ConnString(), root: "/prune/app"}
	meta := layout.New(c.root, layout.DefaultMeta)
	c.run("publish", writeFiles(t, t.TempDir(), map[string]string{"a.conf": "a", "b.conf": "b", "c.conf": "c"})).want(t, 0, "published generation 1")
	one := writeFiles(t, t.TempDir(), map[string]string{"a.conf": "a2"})

	before := snapshot(t, conn, "/prune", meta.Base())
	c.run("publish", one).want(t, 2, "would remove", "b.conf, c.conf", "--prune")
	c.run("publish", "--dry-run", one).want(t, 2, "would remove", "b.conf, c.conf", "--prune")
	code, obj := c.json("publish", one)
	if code != 2 || obj["ok"] != false || obj["kind"] != "would_remove" || strings.Join(strs(obj["would_remove"]), ",") != "b.conf,c.conf" {
		t.Fatalf("--json refused publish: %d %v", code, obj)
	}
	c.run("publish", "--dry-run", "--prune", one).want(t, 0, "dry run: would publish generation 2", "2 removed", "- b.conf", "- c.conf")
	if after := snapshot(t, conn, "/prune", meta.Base()); after != before {
		t.Fatalf("a refused publish or a dry run wrote:\nbefore %s\nafter %s", before, after)
	}
	// Adding and changing items needs no --prune.
	c.run("publish", writeFiles(t, t.TempDir(), map[string]string{"a.conf": "a2", "b.conf": "b", "c.conf": "c", "d.conf": "d"})).
		want(t, 0, "published generation 2", "1 added, 1 changed, 0 removed")
	c.run("publish", "--prune", one).want(t, 0, "published generation 3", "3 removed", "- b.conf", "- c.conf", "- d.conf")
	c.run("get").want(t, 0, "generation 3", "a.conf")
	// A rollback restores a whole past set: removal is implicit.
	c.run("rollback", "--to", "2").want(t, 0, "published generation 4", "3 added, 0 changed, 0 removed")
	c.run("rollback", "--to", "1").want(t, 0, "published generation 5", "0 added, 1 changed, 1 removed", "- d.conf")
}

// TestCLIPutDelete: single-item edits keep the other items, read stdin,
// validate, refuse a missing item and the last one, and store a message.
func TestCLIPutDelete(t *testing.T) {
	srv := startZK(t)
	conn := srv.Connect(t, 10*time.Second)
	c := cli{t: t, zk: srv.ConnString(), root: "/edit/app"}
	meta := layout.New(c.root, layout.DefaultMeta)
	// A root that was never published (a wiped ZooKeeper, a typo) is not
	// turned into a one-item set unless asked.
	fresh := c
	fresh.root = "/edit/fresh"
	fresh.runIn(strings.NewReader("x"), "put", "only.conf").want(t, 1, "/edit/fresh", "never been published", "nothing written", "put --create")
	if ok, _, err := conn.Exists("/edit/fresh"); err != nil || ok {
		t.Fatalf("a refused put created the root: exists %v, %v", ok, err)
	}
	fresh.runIn(strings.NewReader("x"), "put", "only.conf", "--create").want(t, 0, "published generation 1")

	c.run("publish", writeFiles(t, t.TempDir(), map[string]string{"a.conf": "a", "b.conf": "b"})).want(t, 0, "published generation 1")

	file := filepath.Join(writeFiles(t, t.TempDir(), map[string]string{"new.json": `{"pool": 8}`}), "new.json")
	c.run("put", "app.json", file, "-m", "alice: raise the pool (OPS-12)").
		want(t, 0, "published generation 2", "1 added, 0 changed, 0 removed", "+ app.json")
	c.runIn(strings.NewReader("from stdin\n"), "put", "b.conf", "-").want(t, 0, "published generation 3", "~ b.conf")
	c.runIn(strings.NewReader("no file argument\n"), "put", "c.conf").want(t, 0, "published generation 4", "+ c.conf")
	c.runIn(strings.NewReader("no file argument\n"), "put", "c.conf").want(t, 0, "unchanged at generation 4")
	for name, want := range map[string]string{"a.conf": "a", "b.conf": "from stdin\n", "c.conf": "no file argument\n", "app.json": `{"pool": 8}`} {
		if o := c.run("get", name); o.code != 0 || o.stdout != want {
			t.Fatalf("get %s after the puts: %+v, want %q", name, o, want)
		}
	}

	before := snapshot(t, conn, "/edit", meta.Base())
	c.runIn(strings.NewReader(`{"pool": `), "put", "app.json").want(t, 2, `item "app.json"`)
	c.runIn(strings.NewReader("x"), "put", "bad//name").want(t, 2, `item path "bad//name": component 2 is empty`)
	c.run("put", "x.conf", filepath.Join(t.TempDir(), "missing")).want(t, 2, "missing")
	c.run("delete", "nope.conf", "a.conf").want(t, 2, `item "nope.conf"`, "not in the live set", "nothing deleted")
	if after := snapshot(t, conn, "/edit", meta.Base()); after != before {
		t.Fatalf("a refused edit wrote:\nbefore %s\nafter %s", before, after)
	}
	c.runIn(strings.NewReader(`{"pool": `), "put", "app.json", "--no-validate").want(t, 0, "published generation 5", "~ app.json")

	code, obj := c.json("delete", "a.conf", "c.conf", "--message", "bob: retired")
	if code != 0 || num(obj["generation"]) != 6 || strings.Join(strs(obj["removed"]), ",") != "a.conf,c.conf" || obj["message"] != "bob: retired" {
		t.Fatalf("--json delete: %d %v", code, obj)
	}
	c.run("delete", "b.conf").want(t, 0, "published generation 7", "- b.conf")
	c.run("get").want(t, 0, "generation 7", "app.json")
	c.run("delete", "app.json").want(t, 2, "the set is empty", "--allow-empty")
	c.run("delete", "app.json", "--allow-empty", "--dry-run").want(t, 0, "dry run: would publish generation 8", "- app.json")
	c.run("delete", "app.json", "--allow-empty").want(t, 0, "published generation 8", "- app.json")

	code, obj = c.json("history")
	gens := obj["generations"].([]any)
	msgs := map[int64]string{}
	for _, g := range gens {
		m := g.(map[string]any)
		msgs[num(m["generation"])] = m["message"].(string)
	}
	want := map[int64]string{1: "", 2: "alice: raise the pool (OPS-12)", 3: "put b.conf", 4: "put c.conf", 5: "put app.json",
		6: "bob: retired", 7: "delete b.conf", 8: "delete app.json"}
	if code != 0 || fmt.Sprint(msgs) != fmt.Sprint(want) {
		t.Fatalf("--json history messages %v, want %v", msgs, want)
	}
	c.run("history").want(t, 0, "MESSAGE", "alice: raise the pool (OPS-12)", "delete app.json")

	// --wait follows the rollout as publish --wait does: with no agent
	// expected it cannot complete (exit 5), after the commit.
	c.runIn(strings.NewReader("w"), "put", "w.conf", "--wait").want(t, 5, "published generation 9", "rollout of generation 9 incomplete")
	c.run("delete", "w.conf", "--allow-empty", "--wait").want(t, 5, "published generation 10", "rollout of generation 10 incomplete")
}

// TestCLIConcurrentPuts: puts of different items at the same time all
// survive (each retries when the other wins the compare-and-swap). Each
// writer puts 3 items, so the other can win at most 3 races against any
// one put: within the 5 attempts whatever the timing.
func TestCLIConcurrentPuts(t *testing.T) {
	srv := startZK(t)
	c := cli{t: t, zk: srv.ConnString(), root: "/edit/concurrent"}
	c.run("publish", writeFiles(t, t.TempDir(), map[string]string{"base": "0"})).want(t, 0, "published generation 1")
	const writers, perWriter = 2, 3
	outs := make(chan outcome, writers*perWriter)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				var out, errb bytes.Buffer
				code := runIO([]string{"--zk", c.zk, "--root", c.root, "--timeout", "60s", "put", fmt.Sprintf("w%d-%d", w, i), "-"},
					strings.NewReader(fmt.Sprintf("%d/%d", w, i)), &out, &errb)
				outs <- outcome{code, out.String(), errb.String()}
			}
		})
	}
	wg.Wait()
	close(outs)
	for o := range outs {
		o.want(t, 0, "published generation")
	}
	o := c.run("get")
	o.want(t, 0, fmt.Sprintf("generation %d", 1+writers*perWriter), "base")
	for w := range writers {
		for i := range perWriter {
			if got := c.run("get", fmt.Sprintf("w%d-%d", w, i)); got.code != 0 || got.stdout != fmt.Sprintf("%d/%d", w, i) {
				t.Fatalf("item w%d-%d lost: %+v", w, i, got)
			}
		}
	}
}

// TestCLIMessage: --message is stored with the generation and shown by
// history and the --json outputs; a bad one is refused before anything
// is written, by every command that takes it.
func TestCLIMessage(t *testing.T) {
	srv := startZK(t)
	conn := srv.Connect(t, 10*time.Second)
	c := cli{t: t, zk: srv.ConnString(), root: "/msg/app"}
	meta := layout.New(c.root, layout.DefaultMeta)
	v1 := writeFiles(t, t.TempDir(), map[string]string{"a.conf": "1"})
	v2 := writeFiles(t, t.TempDir(), map[string]string{"a.conf": "2"})
	code, obj := c.json("publish", v1, "--message", "carol: first cut")
	if code != 0 || obj["message"] != "carol: first cut" {
		t.Fatalf("--json publish: %d %v", code, obj)
	}
	c.run("publish", v2, "-m", "dave: second – ü").want(t, 0, "published generation 2")
	code, obj = c.json("rollback", "--to", "1")
	if code != 0 || num(obj["generation"]) != 3 || obj["message"] != "rollback to generation 1" {
		t.Fatalf("--json rollback: %d %v", code, obj)
	}
	code, obj = c.json("rollback", "--to", "2", "--force", "-m", "erin: undo the undo")
	if code != 0 || obj["message"] != "erin: undo the undo" {
		t.Fatalf("--json rollback --message: %d %v", code, obj)
	}
	o := c.run("history")
	o.want(t, 0, "MESSAGE", "carol: first cut", "dave: second – ü", "rollback to generation 1", "erin: undo the undo")

	before := snapshot(t, conn, "/msg", meta.Base())
	for _, bad := range []string{"two\nlines", strings.Repeat("x", 1025), "bell\a"} {
		for _, args := range [][]string{
			{"publish", v1}, {"publish", v1, "--dry-run"}, {"rollback", "--to", "1"}, {"delete", "a.conf"},
		} {
			c.run(append(args, "--message", bad)...).want(t, 2, "message")
		}
		c.runIn(strings.NewReader("x"), "put", "b.conf", "--message", bad).want(t, 2, "message")
		code, obj := c.json("publish", v1, "--message", bad)
		if code != 2 || obj["kind"] != "invalid_input" || strings.Contains(obj["error"].(string), bad) {
			t.Fatalf("--json bad message: %d %v", code, obj)
		}
	}
	// Reported with the other input problems, at once.
	c.run("publish", filepath.Join(v1, "nope"), "-m", "two\nlines").want(t, 2, "2 problems", "message: character 4", "nope: does not exist")
	c.runIn(strings.NewReader(`{`), "put", "b.json", "-m", "two\nlines").want(t, 2, "2 problems", "message: character 4", `item "b.json"`)
	if after := snapshot(t, conn, "/msg", meta.Base()); after != before {
		t.Fatalf("a refused message wrote:\nbefore %s\nafter %s", before, after)
	}
}
