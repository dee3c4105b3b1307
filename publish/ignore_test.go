package publish

import (
	"path"
	"testing"
)

// TestIgnorePatternMatchesAsPathMatch: a compiled ignore pattern decides
// every name (and relative path) as path.Match decides it, for the
// default patterns and for patterns of every shape the fast path takes
// or leaves to path.Match.
func TestIgnorePatternMatchesAsPathMatch(t *testing.T) {
	patterns := append(DefaultIgnore(), "*", "a*", "*b", "a*b", "ab", "?b", "[ab]*", `\*b`, "a*b*", "**", "conf/*.tmp", "*/x")
	names := []string{"a", "b", "ab", "aab", "abb", "ba", "a.b", "#", "##", "#a#", "#a", "a#", "4913", "49134", "x4913",
		"app.conf~", "~", "app.swp", ".swp", "app.swpx", "app.conf.bak", "x.dpkg-old", "x.rpmnew", "a___jb_tmp___",
		"*b", "item-000.conf", "x", "tmp"}
	compiled := compileIgnore(patterns)
	for _, name := range names {
		for _, rel := range []string{name, "conf/" + name, "d/" + name} {
			for i, p := range compiled {
				target := name
				if p.onPath {
					target = rel
				}
				want, err := path.Match(patterns[i], target)
				if err != nil {
					t.Fatalf("pattern %q: %v", patterns[i], err)
				}
				if got := p.match(rel, name); got != want {
					t.Errorf("pattern %q, name %q, path %q: match %v, path.Match %v", patterns[i], name, rel, got, want)
				}
			}
		}
	}
	simple := 0
	for _, p := range compileIgnore(DefaultIgnore()) {
		if p.simple {
			simple++
		}
	}
	if simple != len(DefaultIgnore()) {
		t.Errorf("%d of the %d default patterns take the fast path, want all", simple, len(DefaultIgnore()))
	}
}
