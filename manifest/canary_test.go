package manifest

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func canaryManifest() *Manifest {
	return &Manifest{
		Format: FormatVersion, Generation: 7, PublishID: "p", Publisher: "u@h", Mode: ModeMulti,
		PublishedAt: time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC),
		Incarnation: strings.Repeat("ab", 16),
		Items:       map[string]Item{"a.json": ItemOf([]byte("{}"))},
		Canary: &Canary{
			Generation: 8, ManifestSHA256: Hash([]byte("candidate")),
			Selection: Selection{Selector: "zone=a", Percent: 12.5},
			RolloutID: "r1", StartedAt: time.Date(2026, 11, 24, 0, 0, 1, 0, time.UTC), Publisher: "u@h",
		},
	}
}

func TestCanaryRoundTrip(t *testing.T) {
	m := canaryManifest()
	got, err := Decode(m.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, m)
	}
	c := &Manifest{Format: FormatVersion, Generation: 8, PublishID: "q", Mode: ModeMulti, Items: map[string]Item{},
		Candidate: &Selection{Selector: "agent in (h1,h2)"}}
	if got, err := Decode(c.Encode()); err != nil || !reflect.DeepEqual(got.Candidate, c.Candidate) {
		t.Fatalf("candidate manifest: %v %+v", err, got)
	}
	end := &Manifest{Format: FormatVersion, Generation: 9, PublishID: "q", Mode: ModeMulti, Items: map[string]Item{}, PromoteOf: 8}
	if got, err := Decode(end.Encode()); err != nil || got.PromoteOf != 8 {
		t.Fatalf("promote manifest: %v %+v", err, got)
	}
}

func TestCanaryInvalidRootRefused(t *testing.T) {
	for name, mutate := range map[string]func(*Canary){
		"not above stable": func(c *Canary) { c.Generation = 7 },
		"bad hash":         func(c *Canary) { c.ManifestSHA256 = "xyz" },
		"no rollout id":    func(c *Canary) { c.RolloutID = "" },
		"bad selector":     func(c *Canary) { c.Selector = "zone in (a" },
		"percent > 100":    func(c *Canary) { c.Percent = 101 },
		"everyone":         func(c *Canary) { c.Selector, c.Percent = "", 0 },
	} {
		m := canaryManifest()
		mutate(m.Canary)
		if _, err := Decode(m.Encode()); !errors.Is(err, ErrForeign) {
			t.Errorf("%s: Decode = %v, want ErrForeign", name, err)
		}
	}
}

func TestSelectionValidate(t *testing.T) {
	for _, s := range []Selection{{Selector: "zone=a"}, {Percent: 0.01}, {Percent: 100}, {Selector: "agent in (a,b)", Percent: 50}} {
		if err := s.Validate(); err != nil {
			t.Errorf("%+v: %v", s, err)
		}
	}
	err := Selection{Selector: "zone=", Percent: 1.234}.Validate()
	if err == nil || !strings.Contains(err.Error(), "two decimals") {
		t.Errorf("want the decimals problem reported, got %v", err)
	}
	if err := (Selection{}).Validate(); err == nil {
		t.Error("a selection of everyone validated")
	}
}

func TestBucketStableAndSpread(t *testing.T) {
	// Pinned: publishers and agents of different releases must put an
	// agent in the same bucket, or a percent canary selects other hosts
	// than the operator was shown.
	for id, want := range map[string]int{"host-1": 3515, "web-a": 789, "web-b": 4444} {
		if got := Bucket(id); got != want {
			t.Fatalf("Bucket(%q) = %d, want %d: the bucket hash changed", id, got, want)
		}
	}
	in := 0
	const n = 20000
	for i := 0; i < n; i++ {
		if (Selection{Percent: 10}).Selects(fmt.Sprintf("host-%d", i), nil) {
			in++
		}
	}
	// A fair hash puts 10 % ± a few standard deviations (σ ≈ 42) in.
	if in < 1800 || in > 2200 {
		t.Fatalf("10%% selected %d of %d", in, n)
	}
	// Growing the percent keeps everyone who was in.
	for i := 0; i < 2000; i++ {
		id := fmt.Sprintf("host-%d", i)
		if (Selection{Percent: 1}).Selects(id, nil) && !(Selection{Percent: 10}).Selects(id, nil) {
			t.Fatalf("%s left the selection when it grew", id)
		}
	}
}

func TestSelectsLabelsAndAgentID(t *testing.T) {
	labels := map[string]string{"zone": "a", "hostname": "h1", "agent": "forged"}
	if !(Selection{Selector: "zone=a"}).Selects("id1", labels) {
		t.Error("zone=a does not select a zone=a agent")
	}
	if (Selection{Selector: "zone=b"}).Selects("id1", labels) {
		t.Error("zone=b selects a zone=a agent")
	}
	if !(Selection{Selector: "agent in (id1,id2)"}).Selects("id1", labels) {
		t.Error("agent id selector misses its agent")
	}
	if (Selection{Selector: "agent=forged"}).Selects("id1", labels) {
		t.Error("a configured agent label overrides the agent id")
	}
}

func TestFollows(t *testing.T) {
	m := canaryManifest()
	inc := m.Incarnation
	m.Canary.Selection = Selection{Selector: "zone=a"}
	a := map[string]string{"zone": "a"}
	b := map[string]string{"zone": "b"}
	for _, tc := range []struct {
		name        string
		id          string
		labels      map[string]string
		held        int64
		incarnation string
		want        bool
	}{
		{"selected", "h1", a, 7, inc, true},
		{"not selected", "h2", b, 7, inc, false},
		{"relabelled out keeps the candidate", "h2", b, 8, inc, true},
		{"held above stable from a superseded candidate", "h2", b, 8, inc, true},
		{"another incarnation's high generation is no claim", "h2", b, 50, strings.Repeat("cd", 16), false},
		{"no identity follows stable", "", a, 0, "", false},
	} {
		if got := m.Follows(tc.id, tc.labels, tc.held, tc.incarnation); got != tc.want {
			t.Errorf("%s: Follows = %v, want %v", tc.name, got, tc.want)
		}
	}
	m.Canary = nil
	if m.Follows("h1", a, 9, inc) {
		t.Error("no canary: following a candidate")
	}
}

func TestWidens(t *testing.T) {
	for _, tc := range []struct {
		from, to Selection
		want     bool
	}{
		{Selection{Percent: 1}, Selection{Percent: 10}, true},
		{Selection{Percent: 10}, Selection{Percent: 1}, false},
		{Selection{Selector: "zone=a", Percent: 10}, Selection{Selector: "zone=a"}, true},
		{Selection{Selector: "zone=a"}, Selection{Selector: "zone=a", Percent: 50}, false},
		{Selection{Selector: "zone=a"}, Selection{Selector: "zone=b"}, false},
	} {
		if got := tc.from.Widens(tc.to); got != tc.want {
			t.Errorf("%+v.Widens(%+v) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
}
