package watch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/rollout"
)

// canaryRequest makes req a driven canary when the watch has a canary
// plan. It reports true (publish nothing) when the directory holds the
// live content or the content of the set the driver last aborted.
func (l *leader) canaryRequest(req *publish.Request, live *manifest.Manifest, ws *state) bool {
	if l.Canary == nil || l.Plan == nil {
		return false
	}
	key := contentKey(req.Items)
	if live != nil && sameContent(req.Items, live) {
		ws.aborted = ""
		return true
	}
	if key == ws.aborted {
		return true
	}
	ws.aborted = ""
	sel := *l.Canary
	req.Canary, req.RolloutPlan, req.ExpectGeneration = &sel, l.Plan, 0
	return false
}

// drive drives the rollout the leader just started, its commits fenced
// by the election node.
func (l *leader) drive(ctx context.Context, fence string, ws *state) error {
	wr := ws.drive
	ws.drive = nil
	ws.known = 0
	rs, err := l.Publisher.Rollout(ctx)
	if err != nil {
		return err
	}
	if rs.Canary == nil || rs.Canary.Generation != wr.res.Generation {
		fmt.Fprintf(l.Out, "rollout of generation %d already ended elsewhere\n", wr.res.Generation)
		return nil
	}
	rp := l.Plan
	id := rs.Canary.RolloutID
	nSteps := max(len(rp.Steps), 1)
	fmt.Fprintf(l.Out, "canary generation %d: driving rollout %s (%d step(s), bake %v each)\n", wr.res.Generation, id, nSteps, rp.Bake)
	progress := func(ev rollout.Event) {
		if l.Progress != nil {
			l.Progress(ev, nSteps)
		}
	}
	dr, err := rollout.Drive(ctx, l.Publisher, l.Fleet, rollout.Plan{RolloutID: id, Selector: l.Canary.Selector, Steps: rp.Steps, Bake: rp.Bake,
		Fence: fence, AllowOldAgents: l.AllowOldAgents, Progress: progress})
	switch {
	case ctx.Err() != nil:
		fmt.Fprintf(l.Out, "stopped: rollout %s left in progress (confpush rollout promote|abort)\n", id)
		return nil
	case errors.Is(err, rollout.ErrEnded):
		fmt.Fprintf(l.Out, "%v\n", err)
		return nil
	case err != nil:
		return err
	case dr.Outcome == rollout.OutcomeAborted:
		ws.aborted = contentKey(wr.items)
		fmt.Fprintf(l.Out, "rollout %s aborted automatically (%s failing); generation %d carries the stable content; change the directory to try again\n",
			id, strings.Join(dr.Failing, ", "), dr.Generation)
	default:
		fmt.Fprintf(l.Out, "rollout %s promoted as generation %d\n", id, dr.Generation)
	}
	ws.known = dr.Generation
	return nil
}

// contentKey identifies a set by its names and contents' hashes.
func contentKey(items map[string][]byte) string {
	var b strings.Builder
	names := make([]string, 0, len(items))
	for n := range items {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(&b, "%s=%s\n", n, manifest.ItemOf(items[n]).SHA256)
	}
	return b.String()
}
