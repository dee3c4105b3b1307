package publish

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/zkconf/zkconf/internal/zktest"
)

// TestEdit covers read-modify-write edits: other items survive, concurrent
// edits lose no update, retries are bounded, an edit error writes nothing.
func TestEdit(t *testing.T) {
	c := startZK(t)

	t.Run("PutAndDeleteKeepTheOtherItems", func(t *testing.T) {
		p := newPub(t, c, "/edit/basic")
		mustPublish(t, p, Request{Items: map[string][]byte{"a": []byte("A"), "b": []byte("B")}})
		res, err := p.Edit(testCtx(t), func(items map[string][]byte) error {
			items["c"] = []byte("C")
			return nil
		}, Request{Message: "add c"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Generation != 2 || !slices.Equal(res.Added, []string{"c"}) || len(res.Removed) != 0 || res.Manifest.Message != "add c" {
			t.Fatalf("put result: %+v", res)
		}
		checkLive(t, p, 2, map[string][]byte{"a": []byte("A"), "b": []byte("B"), "c": []byte("C")})
		if _, err := p.Edit(testCtx(t), func(items map[string][]byte) error {
			delete(items, "a")
			return nil
		}, Request{}); err != nil {
			t.Fatal(err)
		}
		checkLive(t, p, 3, map[string][]byte{"b": []byte("B"), "c": []byte("C")})
	})

	t.Run("NeverPublishedRootStartsEmptyOnlyWhenAsked", func(t *testing.T) {
		p := newPub(t, c, "/edit/fresh")
		called := false
		_, err := p.Edit(testCtx(t), func(items map[string][]byte) error {
			called = true
			items["x"] = []byte("X")
			return nil
		}, Request{})
		if !errors.Is(err, ErrNotPublished) || called {
			t.Fatalf("edit of a never-published root without CreateRoot: err %v, edit called %v", err, called)
		}
		if _, _, err := p.Current(testCtx(t)); !errors.Is(err, ErrNotPublished) {
			t.Fatalf("the refused edit published: %v", err)
		}
		if _, err := p.Edit(testCtx(t), func(items map[string][]byte) error {
			if len(items) != 0 {
				return fmt.Errorf("items of a fresh root: %v", slices.Collect(maps.Keys(items)))
			}
			items["x"] = []byte("X")
			return nil
		}, Request{CreateRoot: true}); err != nil {
			t.Fatal(err)
		}
		checkLive(t, p, 1, map[string][]byte{"x": []byte("X")})
	})

	t.Run("EditErrorWritesNothing", func(t *testing.T) {
		p := newPub(t, c, "/edit/err")
		mustPublish(t, p, Request{Items: map[string][]byte{"a": []byte("A")}})
		before := treeSnapshot(t, p.conn(), "/edit/err", p.paths.Meta)
		want := errors.New("no such item")
		_, err := p.Edit(testCtx(t), func(items map[string][]byte) error {
			items["junk"] = []byte("J")
			return want
		}, Request{})
		if !errors.Is(err, want) {
			t.Fatalf("error %v, want the edit's", err)
		}
		if after := treeSnapshot(t, p.conn(), "/edit/err", p.paths.Meta); !maps.Equal(before, after) {
			t.Fatal("a failed edit changed the tree")
		}
	})

	// A publish landing between the edit's read and its commit makes the
	// edit lose the compare-and-swap; it reads again and keeps both.
	t.Run("LosingEditRetriesAndKeepsTheWinner", func(t *testing.T) {
		p1, p2 := basedPair(t, c, "/edit/race")
		calls := 0
		_, err := p1.Edit(testCtx(t), func(items map[string][]byte) error {
			calls++
			if calls == 1 {
				if _, err := p2.Edit(testCtx(t), func(items map[string][]byte) error {
					items["theirs"] = []byte("T")
					return nil
				}, Request{}); err != nil {
					return err
				}
			}
			items["mine"] = []byte("M")
			return nil
		}, Request{})
		if err != nil {
			t.Fatal(err)
		}
		if calls != 2 {
			t.Fatalf("edit function called %d times, want 2 (one lost race)", calls)
		}
		checkLive(t, p1, 3, map[string][]byte{"base": []byte("0"), "theirs": []byte("T"), "mine": []byte("M")})
	})

	// Two publishers editing different items at once: every update
	// survives. Each edits 3 times, so the other can win at most 3 races
	// against any one edit: within MaxEditAttempts whatever the timing.
	t.Run("ConcurrentEditsLoseNoUpdate", func(t *testing.T) {
		p1, p2 := basedPair(t, c, "/edit/concurrent")
		pubs := []*Publisher{p1, p2}
		const perWriter = 3
		want := map[string][]byte{"base": []byte("0")}
		for w := range pubs {
			for i := range perWriter {
				want[fmt.Sprintf("w%d-%d", w, i)] = []byte(fmt.Sprintf("%d/%d", w, i))
			}
		}
		var wg sync.WaitGroup
		errs := make(chan error, len(pubs)*perWriter)
		for w, p := range pubs {
			wg.Go(func() {
				for i := range perWriter {
					name := fmt.Sprintf("w%d-%d", w, i)
					_, err := p.Edit(testCtx(t), func(items map[string][]byte) error {
						items[name] = want[name]
						return nil
					}, Request{})
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		checkLive(t, pubs[0], int64(1+len(pubs)*perWriter), want)
	})

	// Another publisher lands a generation during every attempt: the edit
	// gives up after MaxEditAttempts with a conflict, and writes nothing.
	t.Run("RetriesAreBounded", func(t *testing.T) {
		p1, p2 := basedPair(t, c, "/edit/storm")
		calls := 0
		_, err := p1.Edit(testCtx(t), func(items map[string][]byte) error {
			calls++
			mustPublish(t, p2, Request{Items: map[string][]byte{"base": []byte(fmt.Sprint(calls))}})
			items["mine"] = []byte("M")
			return nil
		}, Request{})
		var ce *ConflictError
		if !errors.As(err, &ce) || !errors.Is(err, ErrConflict) {
			t.Fatalf("error %v, want a conflict", err)
		}
		if calls != MaxEditAttempts || !strings.Contains(err.Error(), fmt.Sprintf("gave up after %d attempts", MaxEditAttempts)) {
			t.Fatalf("%d attempts, error %v; want %d attempts named in the error", calls, err, MaxEditAttempts)
		}
		checkLive(t, p1, 1+MaxEditAttempts, map[string][]byte{"base": []byte(fmt.Sprint(MaxEditAttempts))})
	})
}

// basedPair returns two publishers of root, on connections of their own,
// after publishing generation 1: {"base": "0"}.
func basedPair(t *testing.T, c *zktest.Cluster, root string) (*Publisher, *Publisher) {
	t.Helper()
	p1, p2 := newPub(t, c, root), newPub(t, c, root)
	mustPublish(t, p1, Request{Items: map[string][]byte{"base": []byte("0")}})
	return p1, p2
}

// TestNoRemove: a publish that would remove live items is refused with
// the list, dry runs included, and nothing is written; without NoRemove
// it removes them.
func TestNoRemove(t *testing.T) {
	c := startZK(t)
	p := newPub(t, c, "/noremove")
	mustPublish(t, p, Request{Items: map[string][]byte{"a": []byte("A"), "b": []byte("B"), "c": []byte("C")}})
	before := treeSnapshot(t, p.conn(), "/noremove", p.paths.Meta)
	for _, dry := range []bool{false, true} {
		_, err := p.Publish(testCtx(t), Request{Items: map[string][]byte{"a": []byte("A2")}, NoRemove: true, DryRun: dry})
		var re *RemovalError
		if !errors.As(err, &re) || !errors.Is(err, ErrWouldRemove) {
			t.Fatalf("dry run %v: error %v, want a RemovalError", dry, err)
		}
		if !slices.Equal(re.Items, []string{"b", "c"}) || re.Generation != 1 || !strings.Contains(err.Error(), "b, c") {
			t.Fatalf("dry run %v: %+v / %v", dry, re, err)
		}
	}
	if after := treeSnapshot(t, p.conn(), "/noremove", p.paths.Meta); !maps.Equal(before, after) {
		t.Fatal("a refused publish changed the tree")
	}
	// Adding and changing items is fine under NoRemove.
	mustPublish(t, p, Request{Items: map[string][]byte{"a": []byte("A2"), "b": []byte("B"), "c": []byte("C"), "d": nil}, NoRemove: true})
	res := mustPublish(t, p, Request{Items: map[string][]byte{"a": []byte("A2")}})
	if !slices.Equal(res.Removed, []string{"b", "c", "d"}) {
		t.Fatalf("publish without NoRemove: %+v", res)
	}
	checkLive(t, p, 3, map[string][]byte{"a": []byte("A2")})
}

// TestMessage: the message is stored with the generation, rollbacks get a
// default one, and a bad message is refused before anything is written.
func TestMessage(t *testing.T) {
	c := startZK(t)
	p := newPub(t, c, "/message")
	res := mustPublish(t, p, Request{Items: map[string][]byte{"a": []byte("1")}, Message: "alice: first – ü"})
	if res.Manifest.Message != "alice: first – ü" {
		t.Fatalf("result message %q", res.Manifest.Message)
	}
	mustPublish(t, p, Request{Items: map[string][]byte{"a": []byte("2")}})
	rb, err := p.Rollback(testCtx(t), 1, Request{})
	if err != nil {
		t.Fatal(err)
	}
	if rb.Manifest.Message != "rollback to generation 1" {
		t.Fatalf("rollback message %q", rb.Manifest.Message)
	}
	hist, err := p.History(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]string{}
	for _, m := range hist {
		got[m.Generation] = m.Message
	}
	if want := map[int64]string{1: "alice: first – ü", 2: "", 3: "rollback to generation 1"}; !maps.Equal(got, want) {
		t.Fatalf("history messages %v, want %v", got, want)
	}

	before := treeSnapshot(t, p.conn(), "/message", p.paths.Meta)
	for _, bad := range []string{strings.Repeat("x", MaxMessageLen+1), "two\nlines", "tab\there", "esc\x1b[31m", "bad \xff utf8"} {
		_, err := p.Publish(testCtx(t), Request{Items: map[string][]byte{"a": []byte("3")}, Message: bad})
		if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), "message") {
			t.Fatalf("message %q: error %v, want an input error about the message", bad, err)
		}
		if strings.Contains(err.Error(), bad) {
			t.Fatalf("the error quotes the message: %v", err)
		}
	}
	if err := ValidateMessage(strings.Repeat("é", MaxMessageLen/2)); err != nil {
		t.Fatalf("a message of exactly %d bytes: %v", MaxMessageLen, err)
	}
	if after := treeSnapshot(t, p.conn(), "/message", p.paths.Meta); !maps.Equal(before, after) {
		t.Fatal("a refused message changed the tree")
	}
}
