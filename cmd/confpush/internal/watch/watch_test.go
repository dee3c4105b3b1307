package watch

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/zkclient"
)

func TestSameContentAndContentKey(t *testing.T) {
	a := map[string][]byte{"a.conf": []byte("1"), "d/b.conf": []byte("2")}
	m := &manifest.Manifest{Items: map[string]manifest.Item{"a.conf": manifest.ItemOf([]byte("1")), "d/b.conf": manifest.ItemOf([]byte("2"))}}
	if !sameContent(a, m) {
		t.Fatal("equal sets reported different")
	}
	b := map[string][]byte{"a.conf": []byte("1"), "d/b.conf": []byte("3")}
	if sameContent(b, m) || contentKey(a) == contentKey(b) {
		t.Fatal("a changed item went unnoticed")
	}
	if sameContent(map[string][]byte{"a.conf": []byte("1")}, m) {
		t.Fatal("a removed item went unnoticed")
	}
	if contentKey(a) != contentKey(map[string][]byte{"d/b.conf": []byte("2"), "a.conf": []byte("1")}) {
		t.Fatal("the key depends on map order")
	}
}

// TestRunPublishesOnStartAndChange runs a watch against a real server:
// the leader publishes the directory at the start of its term and again
// after a change, and Run returns nil when its context ends.
func TestRunPublishesOnStartAndChange(t *testing.T) {
	zkc := zktest.Start(t)
	conn, sess, err := zkclient.DialConn(zkclient.Config{Servers: zkc.Addrs(), SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	cl := zkclient.Fixed(conn, sess)
	const root = "/watched"
	p, err := publish.New(cl, root)
	if err != nil {
		t.Fatal(err)
	}
	f, err := fleet.New(cl, root)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.conf"), []byte("one\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{Client: cl, Publisher: p, Fleet: f, Election: "/zkconf/watched-election",
			Dir: dir, Syntax: true, Debounce: 50 * time.Millisecond, Timeout: 30 * time.Second,
			Out: io.Discard, Log: slog.New(slog.DiscardHandler)})
	}()
	waitFor := func(want string) *manifest.Manifest {
		t.Helper()
		for {
			m, items, err := p.Read(ctx, 0)
			if err == nil && string(items["a.conf"]) == want {
				return m
			}
			if err != nil && !errors.Is(err, publish.ErrNotPublished) {
				t.Fatal(err)
			}
			// The manifest is the root's data: wait for the root to be
			// created or written.
			_, _, ch, err := conn.ExistsW(root)
			if err != nil {
				t.Fatal(err)
			}
			if m, items, err := p.Read(ctx, 0); err == nil && string(items["a.conf"]) == want {
				return m
			}
			select {
			case <-ch:
			case <-ctx.Done():
				t.Fatalf("a.conf never became %q", want)
			}
		}
	}
	if m := waitFor("one\n"); m.Generation != 1 {
		t.Fatalf("first publish is generation %d", m.Generation)
	}
	// The change is written under a hidden name (a watch skips those)
	// and renamed into place: written in place, the truncation is an event
	// of its own, and a writer descheduled for longer than the debounce
	// between it and the write would have the empty file published as
	// generation 2, failing the test for a reason it does not name.
	tmp := filepath.Join(dir, ".a.conf.tmp")
	if err := os.WriteFile(tmp, []byte("two\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "a.conf")); err != nil {
		t.Fatal(err)
	}
	if m := waitFor("two\n"); m.Generation != 2 {
		t.Fatalf("change published as generation %d", m.Generation)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v at the end of its context", err)
	}
}
