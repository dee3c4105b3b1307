package template

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/zkconf/zkconf/internal/benchshape"
)

// benchTemplates are the shipped example templates, the chaos harness's
// and the latency benchmark's (tools/), and loops of the kind the render
// budget counts: what a step costs shows in the last ones.
var benchTemplates = []struct{ name, text string }{
	{"upstreams", `{{- $app := json "app.json" -}}
upstream {{ $app.service }} {
{{- range $app.upstreams }}
    server {{ . }};
{{- end }}
}
`},
	{"summary", `# generation {{ generation }} of the checkout config
service:   {{ (json "app.json").service }}
listen:    {{ (json "app.json").listen }}
new_cart:  {{ (json "app.json").feature_flags.new_cart }}
per_ip:    {{ (yaml "limits.yaml").rate_limit.per_ip }}
items:     {{ join ", " names }}
`},
	{"chaos", `generation {{ generation }}
nonce {{ (json "app.json").request }}
{{ range names }}{{ $p := split ".bin" . }}{{ if eq (len $p) 1 }}item {{ toJSON . }} {{ toJSON (item .) }}{{ else }}bin {{ toJSON . }} {{ len (item .) }}{{ end }}
{{ end }}end {{ len names }}
`},
	{"latency", `gen={{ printf "%08d" generation }}
{{ range names }}{{ item . }}{{ end }}`},
	{"names-loop", `{{ range names }}{{ . }}={{ item . }}
{{ end }}`},
	{"empty-loop-10k", `{{ range until 10000 }}{{ end }}`},
	{"nested-loop-100x100", `{{ range $i := until 100 }}{{ range $j := until 100 }}{{ if eq $i $j }}{{ $i }}{{ end }}{{ end }}{{ end }}`},
}

// benchSnapshot is a set of n plain items plus the examples' app.json and
// limits.yaml.
func benchSnapshot(n int) mapSnap {
	items := map[string]string{
		"app.json":    `{"service": "checkout", "listen": ":8443", "request": "r-1", "upstreams": ["10.0.1.10:9000", "10.0.1.11:9000", "10.0.1.12:9000"], "feature_flags": {"new_cart": true}}`,
		"limits.yaml": "rate_limit:\n  per_ip: 100\n",
	}
	for i := range n {
		items[fmt.Sprintf("item%03d.conf", i)] = strings.Repeat("x", 200)
	}
	return mapSnap{gen: 7, items: items}
}

// BenchmarkExecute renders each template against a snapshot of 100 items:
// the cost of the render budget's checks shows here (compare with the
// code before it).
func BenchmarkExecute(b *testing.B) {
	s := benchSnapshot(100)
	for _, bt := range benchTemplates {
		tm, err := Parse(bt.name, bt.text)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tm.Execute(s); err != nil {
			b.Fatalf("%s: %v", bt.name, err)
		}
		b.Run(bt.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tm.Execute(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkExecuteLargeItems renders the helpers of confbench latency's
// sprig template (tools/bench/latency.go: every item base64-encoded and
// indented, the whole set as JSON, hashed) over 20 items of 64 KiB: a
// render whose garbage (tens of MB: 25 MB for these items, 45 MB for
// random bytes, which JSON escapes) is many times the set's 1.3 MB, which
// the agent's automatic memory limit makes room for (agent/memlimit.go).
func BenchmarkExecuteLargeItems(b *testing.B) {
	const text = `{{ $all := dict }}{{ range $n := names | sortAlpha }}{{ $v := item $n }}{{ $_ := set $all $n $v }}{{ $n }}:{{ $v | b64enc | nindent 2 }}
{{ end }}{{ names | toJson }} {{ $all | toJson | sha256sum }}`
	items := map[string]string{}
	for i := range 20 {
		items[fmt.Sprintf("item%03d.conf", i)] = strings.Repeat(fmt.Sprintf("line %d of a 64 KiB item\n", i), 64<<10/24)
	}
	tm, err := Parse("latency-sprig", text)
	if err != nil {
		b.Fatal(err)
	}
	s := mapSnap{gen: 7, items: items}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tm.Execute(s); err != nil {
			b.Fatal(err)
		}
	}
}

// bytesSnap is a Snapshot that hands out the same slices to every reader,
// as cache.Snapshot does (mapSnap copies on every Get, which a benchmark
// of allocations would count against the template).
type bytesSnap struct {
	gen   int64
	items map[string][]byte
}

func (s bytesSnap) Generation() int64 { return s.gen }
func (s bytesSnap) Names() []string {
	return slices.Sorted(maps.Keys(s.items))
}
func (s bytesSnap) Get(name string) ([]byte, bool) {
	v, ok := s.items[name]
	return v, ok
}

// latencySnap is n items of size bytes shaped as confbench latency's
// (tools/bench/schedule.go: a header line, then one line of letters).
func latencySnap(n, size int) bytesSnap {
	s := bytesSnap{gen: 7, items: map[string][]byte{}}
	for i := range n {
		name := fmt.Sprintf("item-%03d", i)
		head := fmt.Sprintf("bench %s gen=%08d\n", name, 7)
		b := make([]byte, max(size, len(head)))
		copy(b, head)
		for j := len(head); j < len(b); j++ {
			b[j] = 'a' + byte((j+i+7)%26)
		}
		b[len(b)-1] = '\n'
		s.items[name] = b
	}
	return s
}

// BenchmarkExecuteLatency renders confbench latency's template over its
// sets' items (20 of 1 and 64 KiB): what one render of the template target
// allocates is what the agent's memory limit makes room for
// (agent/memlimit.go), so B/op here is the number to keep down.
func BenchmarkExecuteLatency(b *testing.B) {
	for _, size := range []int{1 << 10, 64 << 10} {
		s := latencySnap(20, size)
		tm, err := Parse("latency", benchshape.LatencyTemplate)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("20x%dKiB", size>>10), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tm.Execute(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
