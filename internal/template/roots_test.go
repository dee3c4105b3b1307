package template

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// rootsSnap is a mapSnap offering other roots.
type rootsSnap struct {
	mapSnap
	others map[string]mapSnap
}

func (s rootsSnap) Root(name string) (Snapshot, bool) {
	o, ok := s.others[name]
	return o, ok
}

// TestRootHelpers: every helper that takes an item path takes a root name
// first and reads that root; names and generation take it alone; a root
// the snapshot does not offer fails the render, naming it when literal.
func TestRootHelpers(t *testing.T) {
	snap := rootsSnap{
		mapSnap: mapSnap{gen: 7, items: map[string]string{"site": "web", "db.json": `{"host": "own"}`}},
		others:  map[string]mapSnap{"common": {gen: 3, items: map[string]string{"db.json": `{"host": "db1"}`, "x.yaml": "a: 1", "t.toml": "b = 2"}}},
	}
	tm, err := Parse("t", `{{ item "site" }} {{ (json "db.json").host }} {{ (json "common" "db.json").host }} `+
		`{{ (yaml "common" "x.yaml").a }} {{ (toml "common" "t.toml").b }} {{ has "common" "site" }} {{ has "site" }} `+
		`{{ generation }} {{ generation "common" }} {{ names "common" | join "," }} {{ "db.json" | item "common" }}`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := tm.Execute(snap)
	want := `web own db1 1 2 false true 7 3 db.json,t.toml,x.yaml {"host": "db1"}`
	if err != nil || string(out) != want {
		t.Fatalf("Execute = %q, %v; want %q", out, err, want)
	}
	if got := tm.RootRefs(); !slices.Equal(got, []string{"common"}) {
		t.Errorf("RootRefs = %q", got)
	}
	for _, src := range []string{`{{ item "mars" "x" }}`, `{{ generation "mars" }}`, `{{ item "a" "b" "c" }}`} {
		tm, err := Parse("t", src)
		if err != nil {
			t.Fatal(err)
		}
		_, err = tm.Execute(snap)
		if !errors.Is(err, ErrBadArgument) || (strings.Contains(src, "mars") && !strings.Contains(err.Error(), `"mars"`)) {
			t.Errorf("%s: %v, want ErrBadArgument naming the root", src, err)
		}
	}
	// A snapshot of one root offers no other.
	tm, _ = Parse("t", `{{ item "common" "db.json" }}`)
	if _, err := tm.Execute(snap.mapSnap); !errors.Is(err, ErrBadArgument) {
		t.Errorf("plain snapshot: %v", err)
	}
}
