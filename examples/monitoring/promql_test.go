package monitoring_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// promqlKeywords are the identifiers of PromQL that are not metric names
// and may be followed by something else than "(": operators, modifiers
// and the aggregations (`max by (job) (x)`).
var promqlKeywords = map[string]bool{
	"and": true, "or": true, "unless": true, "bool": true, "offset": true, "atan2": true,
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"inf": true, "nan": true,
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
	"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true,
}

// labelListKeywords take a parenthesised list of label names.
var labelListKeywords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
}

var (
	promqlString = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	promqlToken  = regexp.MustCompile(`\$\{?[A-Za-z0-9_]+\}?|[0-9][0-9A-Za-z_.]*|[A-Za-z_:][A-Za-z0-9_:]*|\S`)
	promqlIdent  = regexp.MustCompile(`^[A-Za-z_:][A-Za-z0-9_:]*$`)
)

// metricNames returns the metric names a PromQL expression selects, in
// order of appearance. It is a lexer, not a parser: it drops strings,
// label matchers and ranges, Grafana variables ($job, ${job},
// $__rate_interval), functions and aggregations (an identifier followed
// by "("), keywords, and the label lists of by, without, on, ignoring,
// group_left and group_right. What is left are the selectors' names;
// promtool check rules has already proved the rules parse.
func metricNames(expr string) []string {
	s := promqlString.ReplaceAllString(expr, `""`)
	s = dropBlocks(s, '{', '}')
	s = dropBlocks(s, '[', ']')
	toks := promqlToken.FindAllString(s, -1)
	var names []string
	for i := 0; i < len(toks); i++ {
		tok := toks[i]
		next := ""
		if i+1 < len(toks) {
			next = toks[i+1]
		}
		switch {
		case tok[0] == '$' || (tok[0] >= '0' && tok[0] <= '9'):
		case labelListKeywords[tok] && next == "(":
			// Skip the label list, to its ")".
			for i++; i < len(toks) && toks[i] != ")"; i++ {
			}
		case promqlKeywords[tok]:
		case next == "(":
			// A function or an aggregation.
		case promqlIdent.MatchString(tok):
			if !slices.Contains(names, tok) {
				names = append(names, tok)
			}
		}
	}
	return names
}

// dropBlocks removes every open...close block (not nested in PromQL's
// label matchers and ranges), keeping the delimiters.
func dropBlocks(s string, open, close byte) string {
	var b strings.Builder
	in := false
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == open:
			in = true
			b.WriteByte(open)
		case s[i] == close:
			in = false
			b.WriteByte(close)
		case !in:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// TestMetricNames holds the lexer to the expressions the dashboard and
// the rules use: a wrong result here would let a misspelled name through
// the export check (or flag a label or a function as a metric).
func TestMetricNames(t *testing.T) {
	for _, c := range []struct {
		expr string
		want []string
	}{
		{`up{job="confagent"} == 0`, []string{"up"}},
		{`zkconf_agent_stale_seconds > 300`, []string{"zkconf_agent_stale_seconds"}},
		{`zkconf_agent_apply_failing == 1 unless on (job, instance) max by (job, instance) (zkconf_agent_target_retrying{class="reload"}) == 1`,
			[]string{"zkconf_agent_apply_failing", "zkconf_agent_target_retrying"}},
		{`count by (job, root) (zkconf_agent_generation < on (job, root) group_left max by (job, root) (zkconf_agent_cache_generation))`,
			[]string{"zkconf_agent_generation", "zkconf_agent_cache_generation"}},
		{`histogram_quantile(0.99, sum by (le) (rate(zkconf_agent_publish_to_apply_seconds_bucket{job=~"$job", root=~"$root"}[$__rate_interval])))`,
			[]string{"zkconf_agent_publish_to_apply_seconds_bucket"}},
		{`sum(x_sum{a="b}c"}[5m] offset 1h) / sum(rate(x_count[${interval}])) or vector(0)`, []string{"x_sum", "x_count"}},
		{`max(zkconf_agent_generation) without (instance) - min(zkcnf_agent_generation)`,
			[]string{"zkconf_agent_generation", "zkcnf_agent_generation"}},
		{`sum(a) by (le) * on (x) group_left (y, z) b`, []string{"a", "b"}},
		{`1 - 2e3 + inf`, nil},
	} {
		if got := metricNames(c.expr); !slices.Equal(got, c.want) {
			t.Errorf("metricNames(%q) = %q, want %q", c.expr, got, c.want)
		}
	}
}
