package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
)

// watchCanaryFlags registers watch's canary flags: each change becomes a
// rollout the leader drives.
func watchCanaryFlags(cmd *cobra.Command) {
	canaryFlags(cmd)
	driverFlags(cmd)
}

// watchRollout is a rollout a watch leader started and drives.
type watchRollout struct {
	res   *publish.Result
	items map[string][]byte
}

// watchCanaryPlan checks watch's canary flags: a canary from watch must be
// driven (--auto or --steps), since a rollout left by hand would refuse
// every later change.
func (a *app) watchCanaryPlan() error {
	sel, err := a.canarySelection()
	if err != nil {
		return err
	}
	if sel != nil && !a.v.GetBool("auto") && a.v.GetString("steps") == "" {
		return usagef("watch --canary needs --auto or --steps: every change is a rollout the leader drives")
	}
	_, _, err = a.driverPlan(sel)
	return err
}

// watchCanaryRequest makes req a driven canary when watch has a canary
// selection. It reports true (publish nothing) when the directory holds
// the live content or the content of the set the driver last aborted.
func (a *app) watchCanaryRequest(req *publish.Request, live *manifest.Manifest, ws *watchState) bool {
	sel, err := a.canarySelection()
	if err != nil {
		return false
	}
	sel, rp, err := a.driverPlan(sel)
	if err != nil || rp == nil {
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
	req.Canary, req.RolloutPlan, req.ExpectGeneration = sel, rp, 0
	return false
}

// watchDrive drives the rollout the leader just started, its commits
// fenced by the election node.
func (a *app) watchDrive(ctx context.Context, p *publish.Publisher, fence string, ws *watchState) error {
	wr := ws.drive
	ws.drive = nil
	ws.known = 0
	rs, err := p.Rollout(ctx)
	if err != nil {
		return err
	}
	if rs.Canary == nil || rs.Canary.Generation != wr.res.Generation {
		fmt.Fprintf(a.stdout, "rollout of generation %d already ended elsewhere\n", wr.res.Generation)
		return nil
	}
	sel, _ := a.canarySelection()
	sel, rp, _ := a.driverPlan(sel)
	id := rs.Canary.RolloutID
	nSteps := max(len(rp.Steps), 1)
	fmt.Fprintf(a.stdout, "canary generation %d: driving rollout %s (%d step(s), bake %v each)\n", wr.res.Generation, id, nSteps, rp.Bake)
	dr, err := p.DriveRollout(ctx, publish.DriverPlan{RolloutID: id, Selector: sel.Selector, Steps: rp.Steps, Bake: rp.Bake,
		Fence: fence, AllowOldAgents: a.v.GetBool("allow-old-agents"), Progress: func(ev publish.DriverEvent) { driverLine(a.stdout, ev, nSteps) }})
	switch {
	case ctx.Err() != nil:
		fmt.Fprintf(a.stdout, "stopped: rollout %s left in progress (confpush rollout promote|abort)\n", id)
		return nil
	case errors.Is(err, publish.ErrRolloutEnded):
		fmt.Fprintf(a.stdout, "%v\n", err)
		return nil
	case err != nil:
		return err
	case dr.Outcome == publish.OutcomeAborted:
		ws.aborted = contentKey(wr.items)
		fmt.Fprintf(a.stdout, "rollout %s aborted automatically (%s failing); generation %d carries the stable content; change the directory to try again\n",
			id, strings.Join(dr.Failing, ", "), dr.Generation)
	default:
		fmt.Fprintf(a.stdout, "rollout %s promoted as generation %d\n", id, dr.Generation)
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
