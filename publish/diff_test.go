package publish

import (
	"slices"
	"strings"
	"testing"
)

func TestDiffSetsBinary(t *testing.T) {
	d := DiffSets(
		map[string][]byte{"bin": {0, 1, 2}, "gone": []byte("x\n"), "same": []byte("s\n")},
		map[string][]byte{"bin": {0, 1, 3, 4}, "new": []byte("n\n"), "same": []byte("s\n")},
		"live", "local")
	if strings.Join(d.Added, ",") != "new" || strings.Join(d.Changed, ",") != "bin" || strings.Join(d.Removed, ",") != "gone" {
		t.Fatalf("sets: %v %v %v", d.Added, d.Changed, d.Removed)
	}
	if !strings.Contains(d.Text, "Binary item bin differs (3 -> 4 bytes)") || strings.Contains(d.Text, "same") {
		t.Fatalf("diff text:\n%s", d.Text)
	}
	if d.Empty() || !DiffSets(map[string][]byte{"a": []byte("1")}, map[string][]byte{"a": []byte("1")}, "x", "y").Empty() {
		t.Fatal("Empty disagrees with the sets")
	}
}

func TestDiffSetsText(t *testing.T) {
	d := DiffSets(map[string][]byte{"a.conf": []byte("x=1\n")}, map[string][]byte{"a.conf": []byte("x=2\n")}, "gen-1", "gen-2")
	for _, want := range []string{"--- gen-1/a.conf", "+++ gen-2/a.conf", "-x=1", "+x=2"} {
		if !strings.Contains(d.Text, want) {
			t.Fatalf("diff text lacks %q:\n%s", want, d.Text)
		}
	}
	d = DiffSets(map[string][]byte{}, map[string][]byte{"n.conf": []byte("n\n")}, "old", "new")
	if !strings.Contains(d.Text, "--- /dev/null") {
		t.Fatalf("an added item is not diffed against /dev/null:\n%s", d.Text)
	}
}

// TestGenerationsAndHistoryDiffs publishes past the retention and checks
// that Generations lists exactly the retained generations, and that
// HistoryDiffs diffs each against the one before it, the oldest retained
// one marked as having no retained predecessor.
func TestGenerationsAndHistoryDiffs(t *testing.T) {
	c := startZK(t)
	ctx := testCtx(t)
	p := newPub(t, c, "/gens", WithRetention(3))
	if gens, err := p.Generations(ctx); err != nil || len(gens) != 0 {
		t.Fatalf("Generations before the first publish = %v, %v", gens, err)
	}
	for i := 1; i <= 5; i++ {
		mustPublish(t, p, Request{Items: map[string][]byte{"a.conf": []byte(strings.Repeat("x", i) + "\n"), "same.conf": []byte("s\n")}})
	}
	gens, err := p.Generations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(gens, []int64{3, 4, 5}) {
		t.Fatalf("Generations = %v, want [3 4 5]", gens)
	}
	hist, err := p.History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	diffs, err := p.HistoryDiffs(ctx, hist)
	if err != nil {
		t.Fatal(err)
	}
	if d := diffs[3]; d.Retained || d.Against != 2 || !d.Empty() {
		t.Fatalf("oldest retained generation's diff = %+v, want not retained against 2", d)
	}
	for _, g := range []int64{4, 5} {
		d := diffs[g]
		if !d.Retained || d.Against != g-1 || !slices.Equal(d.Changed, []string{"a.conf"}) || len(d.Added)+len(d.Removed) != 0 {
			t.Fatalf("generation %d's diff = %+v", g, d)
		}
	}
}
