package template

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	texttemplate "text/template"
	"time"
)

// foreignFuncs is a library of another engine's functions, bound to n and
// to what "get" returns.
func foreignFuncs(n int, get func(string) (string, error)) texttemplate.FuncMap {
	return texttemplate.FuncMap{
		"n":   func() int { return n },
		"get": get,
	}
}

func parseForeign(t *testing.T, text string, limits Limits, safe func(error, func(string) bool) bool) *Foreign {
	t.Helper()
	tm, err := texttemplate.New("f.tmpl").Funcs(foreignFuncs(0, nil)).Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	return NewForeign(tm, limits, safe)
}

// TestForeignStepBudget: a foreign template's range iterations and
// template calls are steps, counted as zkconf's templates count them: a
// budget of exactly the steps lets it finish with its output unchanged,
// one less stops it with ErrBudgetExceeded naming the budget. The dot is
// the data given (nil here, so a missing key prints as text/template's
// default does: the template's own options are kept).
func TestForeignStepBudget(t *testing.T) {
	text := `{{ define "x" }}<{{ . }}>{{ end }}{{ range $i := n }}{{ template "x" $i }}{{ range n }}.{{ end }}{{ end }}|{{ .missing }}`
	steps := int64(1 + 30 + 30*(1+30))
	f := parseForeign(t, text, Limits{MaxSteps: steps}, nil)
	out, err := f.ExecuteContext(context.Background(), foreignFuncs(30, nil), nil)
	if err != nil {
		t.Fatalf("with a budget of %d steps: %v", steps, err)
	}
	var want strings.Builder
	for i := range 30 {
		fmt.Fprintf(&want, "<%d>%s", i, strings.Repeat(".", 30))
	}
	want.WriteString("|<no value>")
	if string(out) != want.String() {
		t.Fatalf("output:\n got %q\nwant %q", out, want.String())
	}
	f = parseForeign(t, text, Limits{MaxSteps: steps - 1}, nil)
	_, err = f.ExecuteContext(context.Background(), foreignFuncs(30, nil), nil)
	if !errors.Is(err, ErrBudgetExceeded) || err.Error() != fmt.Sprintf("render: template f.tmpl: step budget exceeded: more than %d steps (range iterations and template calls; render_steps)", steps-1) {
		t.Fatalf("with a budget of %d steps: err = %v, want ErrBudgetExceeded", steps-1, err)
	}
}

// TestForeignTimeBudgetAndInterrupt: a foreign template still running
// when its time budget is spent stops at its next step; one whose context
// ends stops with ErrInterrupted.
func TestForeignTimeBudgetAndInterrupt(t *testing.T) {
	text := `{{ range n }}{{ range n }}{{ end }}{{ end }}`
	f := parseForeign(t, text, Limits{MaxSteps: math.MaxInt64, Timeout: 100 * time.Millisecond}, nil)
	_, err := f.ExecuteContext(context.Background(), foreignFuncs(1e9, nil), nil)
	if !errors.Is(err, ErrBudgetExceeded) || !strings.HasSuffix(err.Error(), "time budget exceeded: still running after 100ms (render_timeout)") {
		t.Fatalf("err = %v, want the time budget", err)
	}

	f = parseForeign(t, `{{ get "x" }}`+text, Limits{MaxSteps: math.MaxInt64, Timeout: time.Hour}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := f.ExecuteContext(ctx, foreignFuncs(1e9, func(string) (string, error) { close(started); return "", nil }), nil)
		done <- err
	}()
	<-started
	cancel()
	if err := <-done; !errors.Is(err, ErrInterrupted) || !strings.Contains(err.Error(), "render interrupted: context canceled") {
		t.Fatalf("err = %v, want ErrInterrupted", err)
	}
	if _, err := f.ExecuteContext(ctx, foreignFuncs(1, nil), nil); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("with a context already ended: err = %v, want ErrInterrupted", err)
	}
}

// TestForeignFuncsPerExecution: every execution reads the functions it is
// given, also side by side.
func TestForeignFuncsPerExecution(t *testing.T) {
	f := parseForeign(t, `{{ range n }}x{{ end }}`, Limits{}, nil)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			out, err := f.ExecuteContext(context.Background(), foreignFuncs(i, nil), nil)
			if err != nil || string(out) != strings.Repeat("x", i) {
				t.Errorf("n=%d: %q, %v", i, out, err)
			}
		})
	}
	wg.Wait()
}

// errSafe is an error the test's safe function vouches for when its
// subject is a literal of the template.
type errSafe struct{ subject string }

func (e *errSafe) Error() string { return "no such thing: " + e.subject }

// TestForeignErrors: a function's error is shown whole only when safe
// vouches for it (here: its subject is spelt out in the template); any
// other is withheld as zkconf's own templates withhold it, and the
// output limit holds.
func TestForeignErrors(t *testing.T) {
	safe := func(err error, literal func(string) bool) bool {
		var e *errSafe
		return errors.As(err, &e) && literal(e.subject)
	}
	get := func(k string) (string, error) {
		if k == "secret-value" {
			return "", fmt.Errorf("cannot parse %q", k)
		}
		if k == "ok" {
			return "secret-value", nil
		}
		return "", &errSafe{k}
	}
	for _, tt := range []struct{ text, want string }{
		{`{{ get "/db/host" }}`, `render: template: f.tmpl:1:3: executing "f.tmpl" at <get "/db/host">: error calling get: no such thing: /db/host`},
		// A subject computed from a value may be the value: withheld.
		{`{{ get (printf "%s-x" (get "ok")) }}`, `render: template: f.tmpl:1:3: executing "f.tmpl" at <get (printf "%s-x" (get "ok"))>: error calling get: execution failed (details withheld: they may contain item content)`},
		{`{{ get (get "ok") }}`, `render: template: f.tmpl:1:3: executing "f.tmpl" at <get (get "ok")>: error calling get: execution failed (details withheld: they may contain item content)`},
	} {
		f := parseForeign(t, tt.text, Limits{}, safe)
		_, err := f.ExecuteContext(context.Background(), foreignFuncs(0, get), nil)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s:\n got %v\nwant %s", tt.text, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret-value-x") {
			t.Errorf("%s: the error quotes a value: %v", tt.text, err)
		}
	}
	f := parseForeign(t, `{{ get "/db/host" }}`, Limits{}, nil)
	if _, err := f.ExecuteContext(context.Background(), foreignFuncs(0, get), nil); err == nil || !strings.HasSuffix(err.Error(), "error calling get: "+withheld) {
		t.Errorf("without safe: %v", err)
	}
	f = parseForeign(t, `{{ range n }}0123456789{{ end }}`, Limits{MaxOutputBytes: 100}, nil)
	if _, err := f.ExecuteContext(context.Background(), foreignFuncs(11, nil), nil); !errors.Is(err, ErrOutputTooLarge) {
		t.Errorf("output over the limit: %v", err)
	}
}
