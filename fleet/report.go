package fleet

import (
	"context"
	"errors"
	"slices"

	"github.com/zkconf/zkconf/manifest"
)

// Report is a root's fleet judged against its live generation, what
// `confpush status` prints: every agent (Agent.State gives its verdict),
// the counts, the incarnation problems and the agents a health check
// fails for.
type Report struct {
	// Live is the live manifest: generation 0 for a root never published,
	// or one whose znode does not exist.
	Live *manifest.Manifest
	View
	Summary             Summary
	IncarnationProblems []IncarnationProblem
	// Failing are the agents a health check fails for, in id order and
	// then those only an incarnation problem fails: unhealthy ones
	// (Agent.unhealthy: gone and untrusted ones too, so that a check does
	// not read "all good" while a host is missing or a status node is
	// forged) and those not following the root's incarnation.
	Failing []string
}

// Report reads the live manifest and the fleet (Read) and judges them.
func (f *Fleet) Report(ctx context.Context) (*Report, error) {
	live, err := f.Live(ctx)
	if errors.Is(err, ErrRootMissing) {
		live, err = &manifest.Manifest{}, nil
	}
	if err != nil {
		return nil, err
	}
	v, err := f.Read(ctx)
	if err != nil {
		return nil, err
	}
	r := &Report{Live: live, View: v, Summary: Summarize(v.Agents, live.Generation),
		IncarnationProblems: incarnationProblems(v.Agents, live.Incarnation)}
	for _, ag := range v.Agents {
		if ag.unhealthy() {
			r.Failing = append(r.Failing, ag.ID)
		}
	}
	for _, pr := range r.IncarnationProblems {
		if !slices.Contains(r.Failing, pr.ID) {
			r.Failing = append(r.Failing, pr.ID)
		}
	}
	return r, nil
}
