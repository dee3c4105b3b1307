package publish

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/manifest"
)

// TestEncodedSizeMatchesEncode holds the arithmetic manifest size to the
// real encoding: every shape of manifest a publish sizes (the worst case
// included), names and messages with characters encoding/json escapes,
// times in several zones and precisions, and random sets.
func TestEncodedSizeMatchesEncode(t *testing.T) {
	sha := func(i int) string { return manifest.Hash([]byte(fmt.Sprint(i))) }
	at := time.Date(2026, 11, 27, 3, 4, 5, 0, time.UTC)
	odd := []string{
		"plain.conf", "a/b/c.yaml", "<html>&amp;", `quo"te`, `back\slash`, "tab\there",
		"nl\nx", "bell\a", "ff\fbs\b", "ünïcødé/日本語", "line\u2028sep\u2029", "bad\xffutf8\xc3",
		"emoji 😀", "del\x7f", strings.Repeat("n", 255),
	}
	var shapes []*manifest.Manifest
	for i, s := range odd {
		shapes = append(shapes, &manifest.Manifest{
			Format: 1, Generation: int64(i), PublishID: "", PublishedAt: at, Publisher: s,
			Mode: manifest.ModeMulti, Message: s, Items: map[string]manifest.Item{s: {SHA256: sha(i), Size: int64(i)}},
		})
	}
	zones := []*time.Location{time.UTC, time.FixedZone("x", 5*3600+1800), time.FixedZone("y", -7*3600), time.Local}
	for i, z := range zones {
		for _, ns := range []int{0, 1, 120000000, 999999999, 123456000} {
			shapes = append(shapes, &manifest.Manifest{
				Format: 2, Generation: 1 << 62, PublishID: strings.Repeat("f", 32),
				PublishedAt: time.Date(1+i*3000, 1, 2, 3, 4, 5, ns, z), Publisher: "u@h", Mode: manifest.ModeMarker,
				RollbackOf: -5, Incarnation: "inc", Items: map[string]manifest.Item{},
			})
		}
	}
	shapes = append(shapes,
		&manifest.Manifest{Format: 1, PublishedAt: at}, // nil items, every omitempty field empty
		&manifest.Manifest{Format: 1, PublishedAt: time.Now(), Items: map[string]manifest.Item{"a": {Size: -1}}},
		&manifest.Manifest{Format: 1, PublishedAt: at, PromoteOf: 3, AbortOf: 4, Items: map[string]manifest.Item{}},
		&manifest.Manifest{Format: 1, PublishedAt: at, Candidate: &manifest.Selection{Percent: 10},
			Canary: &manifest.Canary{Generation: 7}, Items: map[string]manifest.Item{}},
	)
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune("abcXYZ019-_./<>&\"\\ é日😀\u2028\x01\t")
	word := func() string {
		var b strings.Builder
		for range 1 + rng.IntN(40) {
			b.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	for i := range 300 {
		items := map[string]manifest.Item{}
		for j := range rng.IntN(60) {
			items[word()] = manifest.Item{SHA256: sha(j % 7), Size: rng.Int64N(1 << 40)}
		}
		var msg string
		if i%2 == 0 {
			msg = word()
		}
		shapes = append(shapes, &manifest.Manifest{
			Format: 1 + i%2, Generation: rng.Int64(), PublishID: word(), PublishedAt: time.Unix(rng.Int64N(1<<34), rng.Int64N(1e9)),
			Publisher: word(), Mode: manifest.ModeMulti, RollbackOf: rng.Int64N(3), Incarnation: word()[:1],
			Message: msg, Items: items,
		})
	}
	// The worst case manifestProblem sizes: 20 to 2,000 items of long names.
	for _, n := range []int{20, 500, 2000} {
		hashed := map[string]manifest.Item{}
		for i := range n {
			hashed[fmt.Sprintf("%s/item-%05d.yaml", strings.Repeat("d", 40), i)] = manifest.ItemOf([]byte(fmt.Sprint(i)))
		}
		shapes = append(shapes, worstCase(hashed, strings.Repeat("p", 64), 0, "a <message> & \"quote\""))
	}
	for i, m := range shapes {
		if got, want := encodedSize(m), len(m.Encode()); got != want {
			t.Errorf("shape %d: encodedSize = %d, len(Encode()) = %d (%s)", i, got, want, m.Encode())
		}
	}
}

// TestManifestProblemAtTheBudget checks manifestProblem's arithmetic
// against the final commit it stands for, built with the encoded
// manifest: a budget of exactly the commit's size passes, one byte less
// is refused, and a manifest over one znode's limit is refused.
func TestManifestProblemAtTheBudget(t *testing.T) {
	l := layout.New("/zkconf/app", "/zkconf/meta")
	acl := zk.DigestACL(zk.PermAll, "user", "pw")
	for _, n := range []int{1, 20, 300} {
		hashed := map[string]manifest.Item{}
		for i := range n {
			hashed[fmt.Sprintf("dir/<item>-%d.conf", i)] = manifest.ItemOf([]byte(fmt.Sprint(i % 5)))
		}
		msg := "deploy & <roll> \u2028"
		m := worstCase(hashed, "me@host", 3, msg)
		mb := m.Encode()
		ops := []any{
			&zk.SetDataRequest{Path: l.Root, Data: mb},
			&zk.DeleteRequest{Path: l.Marker()},
			&zk.CreateRequest{Path: l.HistoryNode(m.Generation), Data: mb, Acl: acl},
		}
		seen := map[string]bool{}
		for _, it := range hashed {
			if !seen[it.SHA256] {
				seen[it.SHA256] = true
				ops = append(ops, &zk.CheckVersionRequest{Path: l.Blob(it.SHA256)})
			}
		}
		size := multiSize(ops)
		if err := manifestProblem(hashed, "me@host", 3, msg, l, acl, size); err != nil {
			t.Errorf("%d items: budget %d (the commit's size): %v", n, size, err)
		}
		if err := manifestProblem(hashed, "me@host", 3, msg, l, acl, size-1); err == nil {
			t.Errorf("%d items: budget %d (one byte short) accepted", n, size-1)
		}
	}
	big := map[string]manifest.Item{}
	for i := range 20000 {
		big[fmt.Sprintf("%s-%d", strings.Repeat("x", 60), i)] = manifest.ItemOf(nil)
	}
	if err := manifestProblem(big, "me@host", 0, "", l, acl, 1<<30); err == nil || !strings.Contains(err.Error(), "manifest") {
		t.Errorf("a manifest over one znode's limit: %v", err)
	}
}
