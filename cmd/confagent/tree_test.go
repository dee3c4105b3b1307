package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkconf/zkconf/internal/render"
	"github.com/zkconf/zkconf/publish"
)

// treeBase is round r's tree, three directory levels deep (conf.d/sub/deep).
func treeBase(r int) map[string][]byte {
	return map[string][]byte{
		"app.json":               []byte("app END"),
		"conf.d/site.conf":       fmt.Appendf(nil, "site round=%d END", r),
		"conf.d/sub/a.conf":      []byte("a END"),
		"conf.d/sub/deep/b.conf": fmt.Appendf(nil, "b round=%d END", r),
		"conf.d/sub/deep/c.conf": []byte("c END"),
		"other/x":                []byte("x END"),
	}
}

// treeMoved is round r's tree with a file moved between sub-directories
// (conf.d/sub/a.conf to other/a.conf, same content) and a change.
func treeMoved(r int) map[string][]byte {
	m := treeBase(r)
	m["other/a.conf"] = m["conf.d/sub/a.conf"]
	delete(m, "conf.d/sub/a.conf")
	m["conf.d/site.conf"] = fmt.Appendf(nil, "site round=%d moved END", r)
	return m
}

// treePruned is treeMoved with a sub-directory removed (conf.d/sub/deep,
// and with it conf.d/sub, left empty).
func treePruned(r int) map[string][]byte {
	m := treeMoved(r)
	delete(m, "conf.d/sub/deep/b.conf")
	delete(m, "conf.d/sub/deep/c.conf")
	return m
}

// subtree is what a dir target with src prefix renders of set.
func subtree(set map[string][]byte, prefix string) map[string][]byte {
	out := map[string][]byte{}
	for n, d := range set {
		if rel, ok := strings.CutPrefix(n, prefix); ok {
			out[rel] = d
		}
	}
	return out
}

// treeKey is a set's canonical text, to compare a set read from disk with
// the published ones.
func treeKey(set map[string][]byte) string {
	var b strings.Builder
	for _, n := range slices.Sorted(maps.Keys(set)) {
		fmt.Fprintf(&b, "%s=%q\n", n, set[n])
	}
	return b.String()
}

// readResolved reads every file of a generation directory (the one
// ..data named when the reader resolved it), in every sub-directory.
func readResolved(gen string) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := filepath.WalkDir(gen, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(gen, p)
		files[filepath.ToSlash(rel)] = b
		return nil
	})
	return files, err
}

// TestTreeReaderNeverSeesMixedGeneration runs confagent (the binary)
// with two dir targets over a tree (the whole tree, and src: conf.d/)
// while a tree three levels deep is published, changed (a file moved
// between sub-directories), pruned (a sub-directory removed) and rolled
// back, ten rounds. A reader following the documented protocol (resolve
// ..data once, read every file of every sub-directory through the
// resolved directory, within the grace period) must see exactly one
// published set each time:
//
//   - an observer reads both targets continuously during the whole run;
//   - at every step the reader is forced across the swap: it resolves
//     ..data before the publish and reads only after the agent reported
//     the new generation applied (its status node): it must read the
//     previous set whole, and the new ..data the new set.
func TestTreeReaderNeverSeesMixedGeneration(t *testing.T) {
	e := newEnv(t)
	whole, sites := filepath.Join(e.out, "whole"), filepath.Join(e.out, "sites")
	writeAtomic(t, e.cfgPath, e.agentConfig("text", "info", "", fmt.Sprintf(`  - name: whole
    type: dir
    dest: %s
    grace_period: 120s
  - name: sites
    type: dir
    dest: %s
    src: conf.d/
    grace_period: 120s
  - name: site
    type: file
    item: conf.d/site.conf
    dest: %s
`, whole, sites, filepath.Join(e.out, "site.conf"))))

	// Every set the agent may render is allowed before it is published,
	// so the observer never races the test's own bookkeeping.
	var mu sync.Mutex
	allowed := map[string]map[string]bool{whole: {}, sites: {}}
	allow := func(set map[string][]byte) {
		mu.Lock()
		defer mu.Unlock()
		allowed[whole][treeKey(set)] = true
		allowed[sites][treeKey(subtree(set, "conf.d/"))] = true
	}
	isAllowed := func(dest string, files map[string][]byte) bool {
		mu.Lock()
		defer mu.Unlock()
		return allowed[dest][treeKey(files)]
	}
	allow(treeBase(0))
	e.publish(t, treeBase(0))
	p := e.start(t)
	e.waitApplied(t, "agent-under-test", 1)

	// The observer.
	stop := make(chan struct{})
	var observed, discarded int
	var violation error
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, dest := range []string{whole, sites} {
				gen, err := render.CurrentPath(dest)
				if err != nil {
					violation = fmt.Errorf("%s: ..data does not resolve: %w", dest, err)
					return
				}
				files, err := readResolved(gen)
				if errors.Is(err, fs.ErrNotExist) {
					discarded++ // only past the grace period: never within this test
					continue
				}
				if err != nil {
					violation = err
					return
				}
				if !isAllowed(dest, files) {
					violation = fmt.Errorf("%s: a set that was never published (mixed generations?):\n%s", dest, treeKey(files))
					return
				}
				observed++
			}
			time.Sleep(2 * time.Millisecond) // paces the reader; the checks above never wait on it
		}
	})

	var held map[string]string // dest -> generation directory resolved before a step
	current := treeBase(0)
	step := func(what string, next map[string][]byte, rollbackTo int64) {
		t.Helper()
		held = map[string]string{}
		for _, dest := range []string{whole, sites} {
			gen, err := render.CurrentPath(dest)
			if err != nil {
				t.Fatal(err)
			}
			held[dest] = gen
		}
		allow(next)
		var g int64
		if rollbackTo > 0 {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			res, err := e.pub.Rollback(ctx, rollbackTo, publish.Request{})
			cancel()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			g = res.Generation
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			res, err := e.pub.Publish(ctx, publish.Request{Items: next})
			cancel()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			g = res.Generation
		}
		e.waitApplied(t, "agent-under-test", g)
		for dest, want := range map[string]map[string][]byte{whole: next, sites: subtree(next, "conf.d/")} {
			prev := current
			if dest == sites {
				prev = subtree(current, "conf.d/")
			}
			// Forced across the swap: the directory resolved before it
			// still holds the previous set, whole, in every sub-directory.
			got, err := readResolved(held[dest])
			if err != nil || treeKey(got) != treeKey(prev) {
				t.Fatalf("%s, %s: the set resolved before the swap read after it: %v\n%s\nwant\n%s", what, dest, err, treeKey(got), treeKey(prev))
			}
			now, err := render.CurrentPath(dest)
			if err != nil || now == held[dest] {
				t.Fatalf("%s, %s: ..data did not move (%v)", what, dest, err)
			}
			if got, err := readResolved(now); err != nil || treeKey(got) != treeKey(want) {
				t.Fatalf("%s, %s: generation %d reads %v\n%s\nwant\n%s", what, dest, g, err, treeKey(got), treeKey(want))
			}
		}
		current = next
	}

	var baseGen int64 = 1
	for r := range 10 {
		step(fmt.Sprintf("round %d: move", r), treeMoved(r), 0)
		step(fmt.Sprintf("round %d: prune", r), treePruned(r), 0)
		step(fmt.Sprintf("round %d: roll back to %d", r, baseGen), treeBase(r), baseGen)
		if r < 9 {
			step(fmt.Sprintf("round %d: next base", r+1), treeBase(r+1), 0)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			m, _, err := e.pub.Current(ctx)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			baseGen = m.Generation
		}
	}
	close(stop)
	wg.Wait()
	if violation != nil {
		t.Fatal(violation)
	}
	if observed == 0 {
		t.Fatal("the observer never read a set")
	}
	t.Logf("observer: %d sets read, each one published; %d discarded", observed, discarded)
	if b, err := os.ReadFile(filepath.Join(e.out, "site.conf")); err != nil || string(b) != string(current["conf.d/site.conf"]) {
		t.Fatalf("file target of conf.d/site.conf: %q %v", b, err)
	}
	p.kill()
}
