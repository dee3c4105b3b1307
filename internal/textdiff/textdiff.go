// Package textdiff writes line-based unified diffs, for confpush diff and
// confagent --dry-run.
package textdiff

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxCells bounds the LCS table (lines(a) × lines(b)); larger inputs are
// reported as differing without a line diff.
const maxCells = 16 << 20

// Unified returns a unified diff of a and b with 3 lines of context, or ""
// when they are equal. Binary content (not UTF-8, or with NUL bytes) is
// summarised, never printed.
func Unified(aName, bName string, a, b []byte) string {
	if bytes.Equal(a, b) {
		return ""
	}
	if isBinary(a) || isBinary(b) {
		return fmt.Sprintf("Binary content %s (%d bytes) and %s (%d bytes) differ\n", aName, len(a), bName, len(b))
	}
	al, bl := lines(a), lines(b)
	if len(al)*len(bl) > maxCells {
		return fmt.Sprintf("%s (%d lines) and %s (%d lines) differ (too large to diff line by line)\n", aName, len(al), bName, len(bl))
	}
	ops := diff(al, bl)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", aName, bName)
	const ctx = 3
	for i := 0; i < len(ops); {
		// Find the next change.
		for i < len(ops) && ops[i].kind == ' ' {
			i++
		}
		if i == len(ops) {
			break
		}
		start := max(i-ctx, 0)
		end := i
		// Extend the hunk while changes are within 2*ctx of each other.
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*ctx {
				end = min(end+ctx, len(ops))
				break
			}
			end = run
		}
		writeHunk(&out, ops[start:end])
		i = end
	}
	return out.String()
}

type op struct {
	kind         byte // ' ', '-', '+'
	text         string
	aLine, bLine int // 1-based line numbers before this op
}

func writeHunk(out *strings.Builder, ops []op) {
	var na, nb int
	for _, o := range ops {
		if o.kind != '+' {
			na++
		}
		if o.kind != '-' {
			nb++
		}
	}
	as, bs := ops[0].aLine, ops[0].bLine
	if na == 0 {
		as--
	}
	if nb == 0 {
		bs--
	}
	fmt.Fprintf(out, "@@ -%d,%d +%d,%d @@\n", as, na, bs, nb)
	for _, o := range ops {
		out.WriteByte(o.kind)
		out.WriteString(o.text)
		if !strings.HasSuffix(o.text, "\n") {
			out.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

// diff computes the edit script with a longest-common-subsequence table.
func diff(a, b []string) []op {
	n, m := len(a), len(b)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var ops []op
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			ops = append(ops, op{' ', a[i], i + 1, j + 1})
			i++
			j++
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, op{'-', a[i], i + 1, j + 1})
			i++
		default:
			ops = append(ops, op{'+', b[j], i + 1, j + 1})
			j++
		}
	}
	return ops
}

func lines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	s := string(b)
	var out []string
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

func isBinary(b []byte) bool {
	return bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(b)
}
