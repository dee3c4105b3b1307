package promtext

import (
	"bytes"
	"fmt"
	"math"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestExpositionGolden: families sorted by name, label pairs by label
// name whatever order they were declared in, series by label values,
// HELP and label values escaped, histogram buckets cumulative with +Inf,
// _sum and _count, and values as the Prometheus client formats them.
func TestExpositionGolden(t *testing.T) {
	r := NewRegistry()
	cv := NewCounterVec(Opts{Name: "b_total", Help: "Help with a \\ backslash\nand a newline \"quoted\"."}, []string{"target", "kind"})
	cv.WithLabelValues("z", "write").Inc()
	cv.WithLabelValues("a\"q\\\n", "write").Add(2.5)
	cv.WithLabelValues("m", "check")
	g := NewGauge(Opts{Name: "a_gauge", Help: "A gauge."})
	g.Set(1e21)
	h := NewHistogram(Opts{Name: "c_seconds", Help: "A histogram."}, []float64{.005, .5, 1, 300})
	for _, v := range []float64{0.005, 0.3, 1, 2, 1000} {
		h.Observe(v)
	}
	gv := NewGaugeVec(Opts{Name: "d_info", Help: "Info."}, []string{"version"})
	gv.WithLabelValues("old").Set(1)
	gv.Reset()
	gv.WithLabelValues("new").Set(1)
	r.MustRegister(h, cv, gv, g,
		NewGaugeFunc(Opts{Name: "e_func", Help: "A gauge function."}, func() float64 { return math.Inf(-1) }),
		NewCounterFunc(Opts{Name: "f_total", Help: "A counter function."}, func() float64 { return 3 }))
	var buf bytes.Buffer
	n, err := r.WriteTo(&buf)
	if err != nil || n != int64(buf.Len()) {
		t.Fatalf("WriteTo = %d, %v; wrote %d", n, err, buf.Len())
	}
	want := `# HELP a_gauge A gauge.
# TYPE a_gauge gauge
a_gauge 1e+21
# HELP b_total Help with a \\ backslash\nand a newline "quoted".
# TYPE b_total counter
b_total{kind="check",target="m"} 0
b_total{kind="write",target="a\"q\\\n"} 2.5
b_total{kind="write",target="z"} 1
# HELP c_seconds A histogram.
# TYPE c_seconds histogram
c_seconds_bucket{le="0.005"} 1
c_seconds_bucket{le="0.5"} 2
c_seconds_bucket{le="1"} 3
c_seconds_bucket{le="300"} 4
c_seconds_bucket{le="+Inf"} 5
c_seconds_sum 1003.305
c_seconds_count 5
# HELP d_info Info.
# TYPE d_info gauge
d_info{version="new"} 1
# HELP e_func A gauge function.
# TYPE e_func gauge
e_func -Inf
# HELP f_total A counter function.
# TYPE f_total counter
f_total 3
`
	if got := buf.String(); got != want {
		t.Errorf("exposition:\n%s\nwant:\n%s", got, want)
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
		ok     bool
	}{
		{"b_total", []string{"target", "z", "kind", "write"}, 1, true},
		{"b_total", []string{"kind", "write", "target", "z"}, 1, true},
		{"b_total", []string{"target", "z"}, 0, false},
		{"c_seconds_bucket", []string{"le", "+Inf"}, 5, true},
		{"c_seconds_count", nil, 5, true},
		{"d_info", []string{"version", "old"}, 0, false},
		{"f_total", nil, 3, true},
		{"nope", nil, 0, false},
	} {
		if v, ok := r.Value(c.name, c.labels...); v != c.want || ok != c.ok {
			t.Errorf("Value(%s, %q) = %v, %v; want %v, %v", c.name, c.labels, v, ok, c.want, c.ok)
		}
	}
}

func TestHandler(t *testing.T) {
	r := NewRegistry()
	r.MustRegister(NewGauge(Opts{Name: "x", Help: "X."}))
	rec := httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if ct := rec.Header().Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if rec.Code != 200 || rec.Body.String() != "# HELP x X.\n# TYPE x gauge\nx 0\n" {
		t.Errorf("%d %q", rec.Code, rec.Body.String())
	}
}

func TestDuplicateNamePanics(t *testing.T) {
	r := NewRegistry()
	r.MustRegister(NewGauge(Opts{Name: "x", Help: "X."}))
	defer func() {
		if recover() == nil {
			t.Error("registering x twice did not panic")
		}
	}()
	r.MustRegister(NewCounter(Opts{Name: "x", Help: "X."}))
}

// TestConcurrentUpdatesDuringScrape (run with -race): updates of every
// kind while scrapes run; each scrape sees a histogram whose +Inf bucket
// equals its count, and the final values are the sum of the updates.
func TestConcurrentUpdatesDuringScrape(t *testing.T) {
	r := NewRegistry()
	c := NewCounter(Opts{Name: "c_total", Help: "C."})
	cv := NewCounterVec(Opts{Name: "cv_total", Help: "CV."}, []string{"w"})
	g := NewGauge(Opts{Name: "g", Help: "G."})
	gv := NewGaugeVec(Opts{Name: "gv", Help: "GV."}, []string{"w"})
	h := NewHistogram(Opts{Name: "h", Help: "H."}, []float64{1, 10})
	r.MustRegister(c, cv, g, gv, h, NewRuntimeCollector(), NewProcessCollector())
	const workers, updates = 4, 500
	var wg sync.WaitGroup
	done := make(chan struct{})
	scrapeErr := make(chan error, 1)
	go func() {
		defer close(scrapeErr)
		for {
			var buf bytes.Buffer
			if _, err := r.WriteTo(&buf); err != nil {
				scrapeErr <- err
				return
			}
			var inf, count string
			for _, l := range strings.Split(buf.String(), "\n") {
				if v, ok := strings.CutPrefix(l, `h_bucket{le="+Inf"} `); ok {
					inf = v
				}
				if v, ok := strings.CutPrefix(l, "h_count "); ok {
					count = v
				}
			}
			if inf != count {
				scrapeErr <- fmt.Errorf("+Inf bucket %s, count %s in one scrape", inf, count)
				return
			}
			select {
			case <-done:
				return
			default:
			}
		}
	}()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := strconv.Itoa(w)
			for i := range updates {
				c.Inc()
				cv.WithLabelValues(name).Inc()
				cv.WithLabelValues("shared").Add(0.5)
				g.Set(float64(i))
				gv.WithLabelValues(name).Set(float64(i))
				h.Observe(float64(i % 20))
			}
		}()
	}
	wg.Wait()
	close(done)
	if err := <-scrapeErr; err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"c_total", nil, workers * updates},
		{"cv_total", []string{"w", "0"}, updates},
		{"cv_total", []string{"w", "shared"}, workers * updates * 0.5},
		{"h_count", nil, workers * updates},
		// i%20 <= 1 for i%20 in {0, 1}: 2 of every 20.
		{"h_bucket", []string{"le", "1"}, workers * updates / 10},
	} {
		if v, _ := r.Value(x.name, x.labels...); v != x.want {
			t.Errorf("%s%q = %v, want %v", x.name, x.labels, v, x.want)
		}
	}
}

// TestRuntimeAndProcessFamilies: the kept go_* families, and on Linux the
// process_* ones, are exported with plausible values.
func TestRuntimeAndProcessFamilies(t *testing.T) {
	r := NewRegistry()
	r.MustRegister(NewRuntimeCollector(), NewProcessCollector())
	names := []string{"go_goroutines", "go_threads", "go_memstats_heap_alloc_bytes", "go_memstats_sys_bytes"}
	if runtime.GOOS == "linux" {
		names = append(names, "process_cpu_seconds_total", "process_resident_memory_bytes", "process_virtual_memory_bytes",
			"process_open_fds", "process_max_fds", "process_start_time_seconds")
	}
	for _, n := range names {
		if v, ok := r.Value(n); !ok || v < 0 || (v == 0 && n != "process_cpu_seconds_total") {
			t.Errorf("%s = %v, %v", n, v, ok)
		}
	}
	if v, ok := r.Value("go_info", "version", runtime.Version()); !ok || v != 1 {
		t.Errorf("go_info = %v, %v", v, ok)
	}
}
