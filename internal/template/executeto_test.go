package template

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// failingWriter takes limit bytes, then fails every write with err.
type failingWriter struct {
	buf   bytes.Buffer
	limit int
	err   error
}

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.buf.Len()+len(p) > w.limit {
		return 0, w.err
	}
	return w.buf.Write(p)
}

// TestExecuteTo: ExecuteTo writes what ExecuteContext returns; the
// output limit and the step budget hold as they do for a buffer; an
// error of the writer's own (a full disk) ends the execution and is
// returned as it is, not as a render error.
func TestExecuteTo(t *testing.T) {
	snap := mapSnap{gen: 7, items: map[string]string{"a": "alpha", "b": strings.Repeat("b", 1000)}}
	tm, err := ParseWithLimits("t", `{{ generation }}{{ range names }}[{{ . }}={{ item . }}]{{ end }}`, Limits{MaxOutputBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	want, err := tm.ExecuteContext(context.Background(), snap, Host{})
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := tm.ExecuteTo(context.Background(), &got, snap, Host{}); err != nil || !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("ExecuteTo wrote %q, %v; want %q", got.Bytes(), err, want)
	}

	full := errors.New("no space left")
	w := &failingWriter{limit: 100, err: full}
	if err := tm.ExecuteTo(context.Background(), w, snap, Host{}); err != full {
		t.Fatalf("a failing writer: %v (%T), want its own error", err, err)
	}

	small, err := ParseWithLimits("s", `{{ range names }}{{ item . }}{{ end }}`, Limits{MaxOutputBytes: 500})
	if err != nil {
		t.Fatal(err)
	}
	got.Reset()
	if err := small.ExecuteTo(context.Background(), &got, snap, Host{}); !errors.Is(err, ErrOutputTooLarge) || got.Len() > 500 {
		t.Fatalf("over the output limit: %v, %d bytes written", err, got.Len())
	}

	loop, err := ParseWithLimits("l", `{{ range until 100 }}.{{ end }}`, Limits{MaxSteps: 10})
	if err != nil {
		t.Fatal(err)
	}
	got.Reset()
	if err := loop.ExecuteTo(context.Background(), &got, snap, Host{}); !errors.Is(err, ErrBudgetExceeded) {
		t.Fatalf("over the step budget: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := tm.ExecuteTo(ctx, &got, snap, Host{}); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("an ended context: %v", err)
	}
}
