package labelsel

import (
	"strings"
	"testing"
)

func TestParseAndMatch(t *testing.T) {
	labels := map[string]string{"zone": "a", "role": "web", "hostname": "h1"}
	for _, tc := range []struct {
		sel  string
		want bool
		str  string
	}{
		{"", true, ""},
		{"zone=a", true, "zone=a"},
		{"zone==a", true, "zone=a"},
		{" zone = b ", false, "zone=b"},
		{"zone!=b", true, "zone!=b"},
		{"zone!=a", false, "zone!=a"},
		{"missing!=a", true, "missing!=a"},
		{"zone in (a, b)", true, "zone in (a,b)"},
		{"zone in (b,c)", false, "zone in (b,c)"},
		{"zone notin (b,c)", true, "zone notin (b,c)"},
		{"missing notin (b)", true, "missing notin (b)"},
		{"zone notin (a)", false, "zone notin (a)"},
		{"role", true, "role"},
		{"!role", false, "!role"},
		{"!missing", true, "!missing"},
		{"zone=a,role=web", true, "zone=a,role=web"},
		{"zone=a,role=db", false, "zone=a,role=db"},
		{"zone in (a,b),role notin (db),hostname", true, "zone in (a,b),role notin (db),hostname"},
		{"example.com/team=x", false, "example.com/team=x"},
	} {
		s, err := Parse(tc.sel)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.sel, err)
		}
		if got := s.Matches(labels); got != tc.want {
			t.Errorf("%q.Matches = %v, want %v", tc.sel, got, tc.want)
		}
		if s.String() != tc.str {
			t.Errorf("%q.String() = %q, want %q", tc.sel, s.String(), tc.str)
		}
		if again, err := Parse(s.String()); err != nil || again.String() != tc.str {
			t.Errorf("String() of %q does not parse back: %v", tc.sel, err)
		}
	}
}

func TestParseReportsEveryProblem(t *testing.T) {
	_, err := Parse("-bad=a,zone=has space,,zone in (a,b,role between (x)")
	if err == nil {
		t.Fatal("bad selector parsed")
	}
	for _, want := range []string{`key "-bad"`, `value of "zone"`, "empty requirement", "unbalanced parentheses"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if _, err := Parse(strings.Repeat("a", MaxLen+1)); err == nil {
		t.Error("over-long selector parsed")
	}
	for _, bad := range []string{"zone a", "zone in a", "zone in (a))", "zone=(a)"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
}
