package publish

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkconf/zkconf/internal/backoff"
)

// MaxEditAttempts bounds how often Edit reads, edits and publishes when
// other publishes keep winning the compare-and-swap.
const MaxEditAttempts = 5

// editBackoff spaces Edit's attempts, so that editors racing each other
// spread out instead of colliding again.
func editBackoff() backoff.Policy {
	return backoff.Policy{Base: 50 * time.Millisecond, Max: time.Second}
}

// Edit makes the next generation by read-modify-write of the live set:
// it reads the live generation (verified, never torn), lets edit change a
// copy of its items, and publishes the result with ExpectGeneration set
// to the generation read, so that a publish landing in between is never
// overwritten. When another publish wins, Edit reads again and calls edit
// again (at most MaxEditAttempts times in all, with a backoff between),
// so concurrent edits of different items all survive. An error from edit
// stops Edit with that error and nothing written.
//
// req carries the options (Message, Mode, Force, AllowEmpty, DryRun,
// Fence, OverrideMarker, NoRemove); Edit sets its Items and
// ExpectGeneration, and refuses a RollbackOf. Syntax checks of the edited
// items are the caller's (Validate). A root that was never published
// fails with ErrNotPublished unless req.CreateRoot, which starts it from
// an empty set. After MaxEditAttempts lost races
// the error matches ErrConflict and says how many attempts were made.
func (p *Publisher) Edit(ctx context.Context, edit func(items map[string][]byte) error, req Request) (*Result, error) {
	if req.ExpectGeneration != 0 || req.RollbackOf != 0 {
		return nil, &InputError{Err: errors.New("an edit takes no ExpectGeneration (it expects the generation it read) and no RollbackOf")}
	}
	var lastErr error
	for attempt := 1; attempt <= MaxEditAttempts; attempt++ {
		if attempt > 1 {
			if err := editBackoff().Sleep(ctx, attempt-1); err != nil {
				return nil, fmt.Errorf("edit: %w (after %d attempts; last: %w)", err, attempt-1, lastErr)
			}
		}
		m, items, err := p.Read(ctx, 0)
		var base int64
		switch {
		case errors.Is(err, ErrNotPublished) && !req.CreateRoot:
			return nil, fmt.Errorf("edit: %w; nothing written (a new root, a wiped ZooKeeper or a mistyped root: publish the whole set, or create the root with this edit deliberately: confpush put --create, Request.CreateRoot)", err)
		case errors.Is(err, ErrNotPublished):
			items = map[string][]byte{}
		case err != nil:
			return nil, err
		default:
			base = m.Generation
		}
		if err := edit(items); err != nil {
			return nil, err
		}
		r := req
		r.Items = items
		// ExpectGeneration 0 means "no check": for a root never
		// published, a publish landing in between is caught instead by
		// refusing to remove the items it brought.
		r.ExpectGeneration = base
		r.NoRemove = req.NoRemove || base == 0
		res, err := p.Publish(ctx, r)
		var re *RemovalError
		switch {
		case errors.Is(err, ErrConflict):
			lastErr = err
		case base == 0 && !req.NoRemove && errors.As(err, &re):
			lastErr = &ConflictError{Expected: 0, Actual: re.Generation,
				Reason: fmt.Sprintf("root %s was first published while the edit was made", p.paths.Root)}
		default:
			return res, err
		}
		p.log.Info("edit lost the compare-and-swap; reading again", "attempt", attempt, "reason", err.Error())
	}
	return nil, fmt.Errorf("edit: gave up after %d attempts, another publish won each time (retry, or find who keeps publishing with 'confpush history'): %w",
		MaxEditAttempts, lastErr)
}
