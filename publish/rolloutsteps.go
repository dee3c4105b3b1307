package publish

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/zkclient"
)

// This file is the steps of a canary rollout after its start: Widen,
// and the ends, Promote and Abort (each a publish above the candidate).

// Widen widens the selection of rollout rolloutID to next, which must
// select every agent the current selection selects (manifest.Selection's
// Widens): one compare-and-swap of the root's data. A narrower or
// unrelated selection is refused (hosts on the candidate would be asked
// to go back). The Result's Generation is the candidate's.
func (p *Publisher) Widen(ctx context.Context, rolloutID string, next manifest.Selection, message string) (*Result, error) {
	var errs []error
	if err := next.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := ValidateMessage(message); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, &InputError{Err: errors.Join(errs...)}
	}
	data, rst, err := p.get(ctx, p.paths.Root)
	if err != nil {
		return nil, err
	}
	if rst == nil {
		return nil, fmt.Errorf("%s: %w", p.paths.Root, ErrNotPublished)
	}
	m, err := manifest.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("root %s: %w", p.paths.Root, err)
	}
	st := &state{live: m, rootStat: rst}
	if err := p.refuseRollout(st, Request{rolloutID: rolloutID}); err != nil {
		return nil, err
	}
	if !m.Canary.Selection.Widens(next) {
		return nil, &InputError{Err: fmt.Errorf("selection %s does not contain the rollout's selection %s (same selector, a percent at least as high): a rollout only widens",
			DescribeSelection(next), DescribeSelection(m.Canary.Selection))}
	}
	nm := *m
	c := *m.Canary
	c.Selection = next
	nm.Canary = &c
	if _, err := p.multi(ctx, []any{&zk.SetDataRequest{Path: p.paths.Root, Data: nm.Encode(), Version: rst.Version}}); err != nil {
		if zkclient.IsDenied(err) {
			return nil, err
		}
		if zkclient.IsUncertain(err) {
			return nil, fmt.Errorf("%w: widen of rollout %s: %w", ErrOutcomeUnknown, rolloutID, err)
		}
		return nil, p.conflict(ctx, m.Generation, "the root changed since it was read")
	}
	p.appendEvent(ctx, rolloutID, RolloutEvent{At: time.Now().UTC(), Kind: EventWiden, Selection: &next, Generation: c.Generation, By: p.name(), Message: message})
	return &Result{Generation: c.Generation, Mode: manifest.ModeMulti, Manifest: &nm}, nil
}

// Promote ends rollout rolloutID by publishing the candidate's content as
// the next generation (PromoteOf = the candidate's) for every agent. req
// carries the options (Message, Mode, Fence, DryRun); its Items are
// ignored. It fails with a *RolloutConflictError when the root does not
// carry that rollout.
func (p *Publisher) Promote(ctx context.Context, rolloutID string, req Request) (*Result, error) {
	return p.endRollout(ctx, rolloutID, EventPromote, req)
}

// Abort ends rollout rolloutID by publishing the stable content as the
// next generation (AbortOf = the candidate's): canary hosts go back to
// the stable content with a higher generation, the others render nothing
// new.
func (p *Publisher) Abort(ctx context.Context, rolloutID string, req Request) (*Result, error) {
	return p.endRollout(ctx, rolloutID, EventAbort, req)
}

func (p *Publisher) endRollout(ctx context.Context, rolloutID, kind string, req Request) (*Result, error) {
	if rolloutID == "" {
		return nil, &InputError{Err: errors.New("no rollout id")}
	}
	m, _, err := p.Current(ctx)
	if err != nil {
		return nil, err
	}
	if m.Canary == nil || m.Canary.RolloutID != rolloutID {
		found := ""
		if m.Canary != nil {
			found = m.Canary.RolloutID
		}
		return nil, &RolloutConflictError{Root: p.paths.Root, Want: rolloutID, Found: found}
	}
	c := *m.Canary
	var items map[string][]byte
	if kind == EventPromote {
		_, items, err = p.Read(ctx, c.Generation)
		req.promoteOf = c.Generation
	} else {
		_, items, err = p.Read(ctx, m.Generation)
		req.abortOf = c.Generation
	}
	if err != nil {
		return nil, fmt.Errorf("%s rollout %s: read the content: %w", kind, rolloutID, err)
	}
	req.Items, req.rolloutID, req.Force, req.AllowEmpty = items, rolloutID, true, true
	req.Canary, req.Supersede, req.RollbackOf = nil, false, 0
	res, err := p.Publish(ctx, req)
	if err != nil || res.DryRun {
		return res, err
	}
	p.appendEvent(ctx, rolloutID, RolloutEvent{At: time.Now().UTC(), Kind: kind, Generation: res.Generation, By: p.name(), Message: req.Message})
	return res, nil
}
