package rollout

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/errlist"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
)

// ParseSteps reads a step plan, percents to widen to in order ("1%,10%,50%"
// or "1,10,50"): each in (0, 100], each above the one before (a rollout
// only widens). Every problem is reported at once.
func ParseSteps(s string) ([]float64, error) {
	var (
		out  []float64
		errs []error
		prev float64
	)
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(f), "%"), 64)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("--steps: %q is not a percent", f))
		case v <= 0 || v > 100:
			errs = append(errs, fmt.Errorf("--steps: %v%% is outside (0, 100]", v))
		case v <= prev:
			errs = append(errs, fmt.Errorf("--steps: %v%% does not grow (a rollout only widens)", v))
		default:
			out = append(out, v)
			prev = v
		}
	}
	return out, errlist.Join(errs...)
}

// Step is the selection of a step at percent of the rollout's selector: a
// selector at 100% is the selector alone (the same agents, with no
// bucket).
func Step(selector string, percent float64) manifest.Selection {
	sel := manifest.Selection{Selector: selector, Percent: percent}
	if sel.Percent >= 100 && sel.Selector != "" {
		sel.Percent = 0
	}
	return sel
}

// wider reports whether percent widens the selection cur (a selection
// without a percent already selects all its selector selects).
func wider(cur manifest.Selection, percent float64) bool {
	return cur.Percent > 0 && percent > cur.Percent
}

// EmptySelectionError refuses a canary whose selection selects no
// expected agent: a typo in a selector must not become a rollout nobody
// follows.
type EmptySelectionError struct {
	Selection manifest.Selection
	// Expected counts the expected agents, none of them selected.
	Expected int
}

func (e *EmptySelectionError) Error() string {
	return fmt.Sprintf("canary selection %s selects none of the %d expected agents (judged by the labels they report); nothing written. Check the selector with 'confpush status', or start it anyway with --allow-empty-canary",
		publish.DescribeSelection(e.Selection), e.Expected)
}

// checkSelects returns an *EmptySelectionError when sel selects none of
// the expected agents of agents (as fleet.Fleet.List returns them),
// judged by the labels they report.
func checkSelects(agents []fleet.Agent, sel manifest.Selection) error {
	expected := 0
	for _, ra := range Classify(agents, 0, "", &manifest.Canary{Selection: sel}) {
		if ra.Expected {
			expected++
			if ra.Selected {
				return nil
			}
		}
	}
	return &EmptySelectionError{Selection: sel, Expected: expected}
}

// Start publishes req, refusing a canary (req.Canary) whose selection
// selects no expected agent of fl (an *EmptySelectionError, nothing
// written) unless allowEmpty. Without a canary it is pub.Publish.
func Start(ctx context.Context, pub *publish.Publisher, fl *fleet.Fleet, req publish.Request, allowEmpty bool) (*publish.Result, error) {
	if req.Canary != nil && !allowEmpty {
		agents, err := fl.List(ctx)
		if err != nil {
			return nil, err
		}
		if err := checkSelects(agents, *req.Canary); err != nil {
			return nil, err
		}
	}
	return pub.Publish(ctx, req)
}
