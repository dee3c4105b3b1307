package template

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/Masterminds/sprig/v3"
)

// budgetExec parses text with limits and executes it against testSnap.
func budgetExec(t *testing.T, text string, limits Limits) (string, error) {
	t.Helper()
	tm, err := ParseWithLimits("t", text, limits)
	if err != nil {
		t.Fatalf("parse %q: %v", text, err)
	}
	out, err := tm.Execute(testSnap())
	return string(out), err
}

// TestStepBudgetCountsExactly: a step is an iteration of a range or a call
// of a template (the template executed is one): a budget of exactly the
// steps a template takes lets it finish, one less stops it with
// ErrBudgetExceeded and a message naming the budget, whatever the range
// iterates over.
func TestStepBudgetCountsExactly(t *testing.T) {
	snap := mapSnap{gen: 1, items: map[string]string{"n": "300", "obj": `{"a": 1, "b": 2, "c": 3}`}}
	for _, tt := range []struct {
		name, text string
		steps      int64
	}{
		{"no loop", `plain {{ "text" }}{{ "" }}{{ "" }}`, 1},
		{"nested ranges over lists", `{{ range until 300 }}{{ range until 300 }}{{ end }}{{ end }}`, 1 + 300 + 300*300},
		{"range over an integer from an item", `{{ $n := atoi (item "n") }}{{ range $n }}{{ range $n }}{{ end }}{{ end }}`, 1 + 300 + 300*300},
		{"range over a map", `{{ range $k, $v := json "obj" }}{{ $k }}{{ end }}`, 1 + 3},
		{"range with else runs no body", `{{ range until 0 }}x{{ else }}none{{ end }}`, 1},
		{"break and continue", `{{ range $i := until 10 }}{{ if lt $i 5 }}{{ continue }}{{ end }}{{ if eq $i 7 }}{{ break }}{{ end }}{{ end }}`, 1 + 8},
		{"range in if and with", `{{ if true }}{{ with 1 }}{{ range until 4 }}{{ end }}{{ end }}{{ end }}`, 1 + 4},
		{"template calls", `{{ define "x" }}{{ range until 2 }}{{ end }}{{ end }}{{ template "x" }}{{ template "x" }}`, 1 + 2*(1+2)},
		{"recursive template", `{{ define "a" }}{{ if lt . 10 }}{{ template "a" (add1 .) }}{{ template "a" (add1 .) }}{{ end }}{{ end }}{{ template "a" 0 }}`, 1 + (1<<11 - 1)},
		{"block", `{{ block "b" 3 }}{{ range until . }}{{ end }}{{ end }}`, 1 + 1 + 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tm, err := ParseWithLimits("t", tt.text, Limits{MaxSteps: tt.steps})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tm.Execute(snap); err != nil {
				t.Fatalf("with a budget of %d steps: %v", tt.steps, err)
			}
			if tt.steps == 1 {
				return // a budget of 0 is the default
			}
			tm, err = ParseWithLimits("t", tt.text, Limits{MaxSteps: tt.steps - 1})
			if err != nil {
				t.Fatal(err)
			}
			_, err = tm.Execute(snap)
			want := fmt.Sprintf("render: template t: step budget exceeded: more than %d steps", tt.steps-1)
			if !errors.Is(err, ErrBudgetExceeded) || err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("with a budget of %d steps: err = %v, want ErrBudgetExceeded %q...", tt.steps-1, err, want)
			}
			var te *Error
			if !errors.As(err, &te) || te.Template != "t" {
				t.Fatalf("err = %#v, want an *Error naming the template", err)
			}
		})
	}
}

// TestBudgetStopsWedgingTemplate is issue 23's template: a count from an
// item squared. With the default limits it ends, with ErrBudgetExceeded
// naming one of the two budgets, instead of running for hours.
func TestBudgetStopsWedgingTemplate(t *testing.T) {
	snap := mapSnap{gen: 1, items: map[string]string{"n.txt": "200000\n"}}
	tm, err := Parse("app", `{{ $n := atoi (trim (item "n.txt")) }}{{ range until $n }}{{ range until $n }}{{ end }}{{ end }}`)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = tm.Execute(snap)
	if !errors.Is(err, ErrBudgetExceeded) {
		t.Fatalf("err = %v, want ErrBudgetExceeded", err)
	}
	if !strings.Contains(err.Error(), "more than 10000000 steps (range iterations and template calls; render_steps)") &&
		!strings.Contains(err.Error(), "still running after 10s (render_timeout)") {
		t.Fatalf("the message does not name a default budget: %v", err)
	}
	t.Logf("%v after %v", err, time.Since(start))
}

// TestTimeBudget: a template still running when its time budget is spent
// stops at its next step with ErrBudgetExceeded, saying so.
func TestTimeBudget(t *testing.T) {
	_, err := budgetExec(t, `{{ range 1000000000 }}{{ range 1000000000 }}{{ end }}{{ end }}`,
		Limits{MaxSteps: math.MaxInt64, Timeout: 100 * time.Millisecond})
	if !errors.Is(err, ErrBudgetExceeded) || !strings.HasSuffix(err.Error(), "time budget exceeded: still running after 100ms (render_timeout)") {
		t.Fatalf("err = %v, want the time budget", err)
	}
}

// TestTimeBudgetStopsQuadraticUniq: uniq over lists of lists compares
// each element with every kept one; the time budget stops it between
// comparisons.
func TestTimeBudgetStopsQuadraticUniq(t *testing.T) {
	_, err := budgetExec(t, `{{ len (uniq (chunk 1 (until 500000))) }}`, Limits{Timeout: 100 * time.Millisecond})
	if !errors.Is(err, ErrBudgetExceeded) || !strings.Contains(err.Error(), "time budget exceeded") {
		t.Fatalf("err = %v, want the time budget", err)
	}
}

// TestExecuteContextInterrupted: ExecuteContext stops with ErrInterrupted
// when its context ends, during the execution or before it starts; the
// error is not a budget error.
func TestExecuteContextInterrupted(t *testing.T) {
	tm, err := ParseWithLimits("t", `{{ env "X" }}{{ range 1000000000 }}{{ range 1000000000 }}{{ end }}{{ end }}`,
		Limits{MaxSteps: math.MaxInt64, Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	host := Host{LookupEnv: func(string) (string, bool) { close(started); return "", false }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := tm.ExecuteContext(ctx, testSnap(), host)
		done <- err
	}()
	<-started
	cancel()
	err = <-done
	if !errors.Is(err, ErrInterrupted) || errors.Is(err, ErrBudgetExceeded) || !strings.Contains(err.Error(), "render interrupted: context canceled") {
		t.Fatalf("err = %v, want ErrInterrupted", err)
	}
	if _, err := tm.ExecuteContext(ctx, testSnap(), Host{}); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("with a context already ended: err = %v, want ErrInterrupted", err)
	}
}

// TestStepMarkersWriteNothing: the markers leave the output as
// text/template alone writes it.
func TestStepMarkersWriteNothing(t *testing.T) {
	text := `{{ define "x" }}<{{ . }}>{{ end }}{{ range $i := until 3 }}{{ template "x" $i }}{{ range until 2 }}.{{ end }}{{ end }}|{{ block "b" . }}b{{ end }}`
	got, err := budgetExec(t, text, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "<0>..<1>..<2>..|b"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestListHelpersMatchSprig: until, untilStep, seq and uniq, rewritten to
// be bounded, return what sprig's return.
func TestListHelpersMatchSprig(t *testing.T) {
	lib := sprig.HermeticTxtFuncMap()
	st := &execState{limits: Limits{}.withDefaults()}
	for _, n := range []int{-5, -1, 0, 1, 7} {
		got, err := st.until(n)
		if want := lib["until"].(func(int) []int)(n); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("until %d = %v %v, want %v", n, got, err, want)
		}
	}
	for _, a := range [][3]int{{0, 10, 3}, {10, 0, -3}, {0, 10, -1}, {10, 0, 1}, {0, 0, 1}, {5, 5, -1}, {-4, 4, 2}, {3, 4, 0}} {
		got, err := st.untilStep(a[0], a[1], a[2])
		if want := lib["untilStep"].(func(int, int, int) []int)(a[0], a[1], a[2]); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("untilStep %v = %v %v, want %v", a, got, err, want)
		}
	}
	for _, p := range [][]int{{}, {5}, {0}, {-3}, {2, 6}, {6, 2}, {1, 2, 9}, {9, -2, 1}, {9, 2, 1}, {1, -2, 9}, {1, 0, 3}, {1, 2, 3, 4}} {
		got, err := st.seq(p...)
		if want := lib["seq"].(func(...int) string)(p...); err != nil || got != want {
			t.Errorf("seq %v = %q %v, want %q", p, got, err, want)
		}
	}
	for _, l := range []any{
		[]any{1, "1", 1, 2.0, 2, "a", "a", nil, nil, true, true, math.NaN(), math.NaN()},
		[]any{[]any{1}, []any{1}, map[string]any{"a": 1}, map[string]any{"a": 1}, "x", []any{2}},
		[]string{"b", "a", "b"},
		[3]int{3, 3, 1},
	} {
		got, err := st.uniq(l)
		want := lib["uniq"].(func(any) []any)(l)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("uniq %v = %v %v, want %v", l, got, err, want)
		}
	}
	if _, err := st.uniq("abc"); !errors.Is(err, ErrBadArgument) {
		t.Errorf("uniq of a string: %v", err)
	}
}

// TestListHelpersBounded: sprig's untilStep loops for ever when the next
// number would overflow; ours stops. And uniq of 100,000 numbers is
// linear (sprig's compares each with every kept one: hours).
func TestListHelpersBounded(t *testing.T) {
	st := &execState{limits: Limits{}.withDefaults()}
	if got, err := st.untilStep(math.MaxInt-1, math.MaxInt, 5); err != nil || !reflect.DeepEqual(got, []int{math.MaxInt - 1}) {
		t.Errorf("untilStep near MaxInt = %v %v", got, err)
	}
	if got, err := st.untilStep(math.MinInt+1, math.MinInt, -5); err != nil || !reflect.DeepEqual(got, []int{math.MinInt + 1}) {
		t.Errorf("untilStep near MinInt = %v %v", got, err)
	}
	got, err := budgetExec(t, `{{ len (uniq (until 100000)) }} {{ len (mustUniq (splitList "," (repeat 50000 "a,b,"))) }}`, Limits{})
	if err != nil || got != "100000 3" {
		t.Fatalf("got %q %v", got, err)
	}
}

// TestOutputSizedAsLast: an execution's buffer starts at the size of the
// template's last output (capped by the output limit), so a large output
// is not built by doubling; outputs that shrink or grow stay exact.
func TestOutputSizedAsLast(t *testing.T) {
	tm, err := ParseWithLimits("t", `{{ range names }}{{ item . }}{{ end }}`, Limits{MaxOutputBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if c := tm.lastSize.buffer(1<<20, &budget{}).buf.Cap(); c != 0 {
		t.Fatalf("before any execution: buffer of %d bytes", c)
	}
	for _, n := range []int{100 << 10, 10, 300 << 10} {
		snap := mapSnap{gen: 1, items: map[string]string{"a": strings.Repeat("a", n/2), "b": strings.Repeat("b", n-n/2)}}
		out, err := tm.Execute(snap)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != n || out[0] != 'a' || out[n-1] != 'b' {
			t.Fatalf("output of %d bytes, want %d", len(out), n)
		}
		if c := tm.lastSize.buffer(1<<20, &budget{}).buf.Cap(); c < n {
			t.Fatalf("after an output of %d bytes the next buffer starts at %d", n, c)
		}
	}
	if c := tm.lastSize.buffer(1000, &budget{}).buf.Cap(); c > 1<<10 {
		t.Fatalf("buffer of %d bytes for an output limit of 1000", c)
	}
}
