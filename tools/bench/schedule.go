package bench

import (
	"fmt"
)

// schedule is the deterministic content of one benchmark root: which items
// every generation changes and what they hold. Publisher, followers and
// checks all derive from it, so a follower can be verified byte for byte
// after a run, and the floor baseline can know which item changed without
// decoding anything (it is the cheapest possible follower).
//
// Generation 1 is the whole set. Generation g >= 2 changes `changed`
// consecutive items, rotating through the set.
type schedule struct {
	salt    string // distinguishes roots, so no two roots share content
	names   []string
	size    int
	changed int
}

func newSchedule(salt string, items, size, changed int) *schedule {
	s := &schedule{salt: salt, size: size, changed: min(changed, items)}
	for i := range items {
		s.names = append(s.names, fmt.Sprintf("item-%03d", i))
	}
	return s
}

// changedIdx returns the indexes of the items generation g writes.
func (s *schedule) changedIdx(g int64) []int {
	if g <= 1 {
		out := make([]int, len(s.names))
		for i := range out {
			out[i] = i
		}
		return out
	}
	out := make([]int, s.changed)
	base := int((g - 2) * int64(s.changed) % int64(len(s.names)))
	for j := range out {
		out[j] = (base + j) % len(s.names)
	}
	return out
}

// changedAt returns the names of the items generation g writes.
func (s *schedule) changedAt(g int64) []string {
	idx := s.changedIdx(g)
	out := make([]string, len(idx))
	for j, i := range idx {
		out[j] = s.names[i]
	}
	return out
}

// changedBetween returns the items that differ between generations held
// and g (held < g): everything when held is 0.
func (s *schedule) changedBetween(held, g int64) []string {
	if held <= 0 || (g-held)*int64(s.changed) >= int64(len(s.names)) {
		return s.names
	}
	if g-held == 1 {
		return s.changedAt(g)
	}
	seen := map[int]bool{}
	var out []string
	for h := held + 1; h <= g; h++ {
		for _, i := range s.changedIdx(h) {
			if !seen[i] {
				seen[i] = true
				out = append(out, s.names[i])
			}
		}
	}
	return out
}

// lastWrite returns the generation that last wrote item i as of g.
func (s *schedule) lastWrite(i int, g int64) int64 {
	for h := g; h >= 2; h-- {
		for _, j := range s.changedIdx(h) {
			if j == i {
				return h
			}
		}
		if (g-h+1)*int64(s.changed) >= int64(len(s.names)) {
			break // every item was written in (h, g]: i was not
		}
	}
	return 1
}

// content is item i as written by generation g: a header naming both, then
// filler up to the item size. Every (item, generation) pair is distinct.
func (s *schedule) content(i int, g int64) []byte {
	head := fmt.Sprintf("%s %s gen=%08d\n", s.salt, s.names[i], g)
	b := make([]byte, max(s.size, len(head)))
	copy(b, head)
	for j := len(head); j < len(b); j++ {
		b[j] = 'a' + byte((j+i+int(g))%26)
	}
	if len(b) > len(head) {
		b[len(b)-1] = '\n'
	}
	return b
}

// set returns the whole set as of generation g.
func (s *schedule) set(g int64) map[string][]byte {
	out := make(map[string][]byte, len(s.names))
	for i, n := range s.names {
		out[n] = s.content(i, s.lastWrite(i, g))
	}
	return out
}

// genOf parses the generation from an item's header ("... gen=00000042"),
// or returns 0.
func genOf(b []byte) int64 {
	const key = "gen="
	for i := 0; i+len(key)+8 <= len(b) && b[i] != '\n'; i++ {
		if string(b[i:i+len(key)]) != key {
			continue
		}
		var g int64
		for _, c := range b[i+len(key) : i+len(key)+8] {
			if c < '0' || c > '9' {
				return 0
			}
			g = g*10 + int64(c-'0')
		}
		return g
	}
	return 0
}
