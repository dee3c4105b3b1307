// Package textdiff writes line-based unified diffs (like diff -u), for
// confpush diff and confagent --dry-run.
package textdiff

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// diffContext is the number of unchanged lines shown around a change.
const diffContext = 3

// maxLCSCells bounds the LCS table (after the common prefix and suffix
// are trimmed); beyond it the differing middle is shown as one replacement.
const maxLCSCells = 4 << 20

// edit is one line of an edit script: kind ' ' (kept), '-' (deleted from
// a) or '+' (inserted from b); ai and bi are the positions in a and b at
// that point (the line's index for the side it belongs to).
type edit struct {
	kind   byte
	ai, bi int
}

// Unified returns the unified diff turning a into b ("" when equal),
// with headers naming them aName and bName, like diff -u. Binary content
// (NUL bytes or invalid UTF-8) is summarised, never printed.
func Unified(aName, bName string, a, b []byte) string {
	if string(a) == string(b) {
		return ""
	}
	if isBinary(a) || isBinary(b) {
		return fmt.Sprintf("Binary content %s (%d bytes) and %s (%d bytes) differ\n", aName, len(a), bName, len(b))
	}
	al, bl := splitLines(string(a)), splitLines(string(b))
	edits := diffLines(al, bl)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", aName, bName)
	for _, h := range hunks(edits) {
		writeHunk(&out, h, al, bl)
	}
	return out.String()
}

// splitLines splits s into lines, each keeping its "\n" (the last one may
// lack it).
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// diffLines computes an edit script by longest common subsequence, after
// trimming the common prefix and suffix.
func diffLines(a, b []string) []edit {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var edits []edit
	for i := range pre {
		edits = append(edits, edit{' ', i, i})
	}
	edits = append(edits, lcs(a[pre:len(a)-suf], b[pre:len(b)-suf], pre, pre)...)
	for i := range suf {
		edits = append(edits, edit{' ', len(a) - suf + i, len(b) - suf + i})
	}
	return edits
}

// lcs diffs a and b (offsets ao and bo in the whole inputs).
func lcs(a, b []string, ao, bo int) []edit {
	n, m := len(a), len(b)
	var edits []edit
	if n == 0 || m == 0 || n*m > maxLCSCells {
		for i := range n {
			edits = append(edits, edit{'-', ao + i, bo})
		}
		for j := range m {
			edits = append(edits, edit{'+', ao + n, bo + j})
		}
		return edits
	}
	// dp[i*(m+1)+j] is the LCS length of a[i:] and b[j:].
	dp := make([]int32, (n+1)*(m+1))
	at := func(i, j int) int32 { return dp[i*(m+1)+j] }
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i*(m+1)+j] = at(i+1, j+1) + 1
			} else {
				dp[i*(m+1)+j] = max(at(i+1, j), at(i, j+1))
			}
		}
	}
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			edits = append(edits, edit{' ', ao + i, bo + j})
			i++
			j++
		case at(i+1, j) >= at(i, j+1):
			edits = append(edits, edit{'-', ao + i, bo + j})
			i++
		default:
			edits = append(edits, edit{'+', ao + i, bo + j})
			j++
		}
	}
	for ; i < n; i++ {
		edits = append(edits, edit{'-', ao + i, bo + j})
	}
	for ; j < m; j++ {
		edits = append(edits, edit{'+', ao + i, bo + j})
	}
	return edits
}

// hunks groups an edit script into hunks: changes with up to diffContext
// kept lines around them, merged when their contexts touch.
func hunks(edits []edit) [][]edit {
	var out [][]edit
	start, end := -1, -1 // current hunk [start, end)
	for i, e := range edits {
		if e.kind == ' ' {
			continue
		}
		lo, hi := max(0, i-diffContext), min(len(edits), i+1+diffContext)
		if start >= 0 && lo <= end {
			end = hi
			continue
		}
		if start >= 0 {
			out = append(out, edits[start:end])
		}
		start, end = lo, hi
	}
	if start >= 0 {
		out = append(out, edits[start:end])
	}
	return out
}

func writeHunk(out *strings.Builder, h []edit, a, b []string) {
	var na, nb int
	for _, e := range h {
		if e.kind != '+' {
			na++
		}
		if e.kind != '-' {
			nb++
		}
	}
	fmt.Fprintf(out, "@@ -%s +%s @@\n", hunkRange(h[0].ai, na), hunkRange(h[0].bi, nb))
	for _, e := range h {
		var line string
		switch e.kind {
		case '+':
			line = b[e.bi]
		default:
			line = a[e.ai]
		}
		out.WriteByte(e.kind)
		out.WriteString(line)
		if !strings.HasSuffix(line, "\n") {
			out.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

// hunkRange formats a hunk's range like diff -u: "start,count" (1-based),
// "start" alone for one line, and the line before for an empty range.
func hunkRange(start, count int) string {
	switch count {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, count)
}

func isBinary(b []byte) bool {
	return strings.IndexByte(string(b), 0) >= 0 || !utf8.Valid(b)
}

// Line is one line of a structured diff: Kind is ' ' (kept), '-' (only in
// a) or '+' (only in b); A and B are its 1-based line numbers in a and b (0
// on the side it is not in); Text is the line without its newline.
type Line struct {
	Kind byte
	A, B int
	Text string
}

// Hunks returns the diff turning a into b as hunks of lines with the
// context Unified shows (nil when equal), for callers that render it
// themselves (the dashboard's unified and side-by-side views). Added and
// Removed count the changed lines. The caller decides whether content may
// be shown; binary content gives no hunks (ok false).
func Hunks(a, b []byte) (out [][]Line, added, removed int, ok bool) {
	if isBinary(a) || isBinary(b) {
		return nil, 0, 0, false
	}
	if string(a) == string(b) {
		return nil, 0, 0, true
	}
	al, bl := splitLines(string(a)), splitLines(string(b))
	for _, h := range hunks(diffLines(al, bl)) {
		lines := make([]Line, 0, len(h))
		for _, e := range h {
			l := Line{Kind: e.kind}
			switch e.kind {
			case ' ':
				l.A, l.B, l.Text = e.ai+1, e.bi+1, al[e.ai]
			case '-':
				l.A, l.Text = e.ai+1, al[e.ai]
				removed++
			default:
				l.B, l.Text = e.bi+1, bl[e.bi]
				added++
			}
			l.Text = strings.TrimSuffix(l.Text, "\n")
			lines = append(lines, l)
		}
		out = append(out, lines)
	}
	return out, added, removed, true
}
