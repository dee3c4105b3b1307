package errlist

import (
	"errors"
	"testing"

	"github.com/hashicorp/go-multierror"
)

func TestJoin(t *testing.T) {
	if Join() != nil || Join(nil, nil) != nil {
		t.Fatal("Join of no errors is not nil")
	}
	a, b, c := errors.New("a"), errors.New("b\nsecond line"), errors.New("c")
	if got := Join(nil, a).Error(); got != "a" {
		t.Errorf("one problem: %q", got)
	}
	err := Join(a, Join(b, c))
	want := "3 problems:\n  - a\n  - b\n    second line\n  - c"
	if err.Error() != want {
		t.Errorf("got %q, want %q", err.Error(), want)
	}
	var m *multierror.Error
	if !errors.As(err, &m) || len(m.Errors) != 3 {
		t.Fatalf("not a flat *multierror.Error of 3: %#v", err)
	}
	if !errors.Is(err, c) {
		t.Error("errors.Is does not find a nested problem")
	}
}
