package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
)

// CheckResult is one target's check command run against the output a dry
// run would apply.
type CheckResult struct {
	Target string
	// Err is the check's failure (a *CommandError), nil when it passed.
	Err error
}

// CheckPlan runs the check command of every target that changes (changes,
// from Plan) against the output applying snap would give it, as Apply runs
// it against the staged output ({{.src}} and $ZKCONF_STAGED name it): the
// checks of confagent --dry-run. The outputs are written below dir (one
// subdirectory per target, private to the user), never beside the
// destinations, so a dry run changes nothing an application reads.
// Targets without a check command, or whose output would not change (Apply
// checks only those that do), are left out.
func (r *Renderer) CheckPlan(ctx context.Context, snap Snapshot, changes []Change, dir string) ([]CheckResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	changed := map[string]bool{}
	for _, c := range changes {
		changed[c.Target] = true
	}
	var results []CheckResult
	for i, t := range r.targets {
		if t.spec.Check == "" || !changed[t.spec.Name] {
			continue
		}
		path, err := t.writeForCheck(snap, filepath.Join(dir, strconv.Itoa(i)))
		if err != nil {
			return results, fmt.Errorf("target %q: stage for its check: %w", t.spec.Name, err)
		}
		_, err = runCommand(ctx, t.c.CheckCommand(path, snap.Generation()))
		results = append(results, CheckResult{Target: t.spec.Name, Err: err})
	}
	return results, nil
}

// writeForCheck writes t's output for snap below dir and returns what a
// check command examines (targets.Target.WriteForCheck), rendered as
// Apply renders it.
func (t *target) writeForCheck(snap Snapshot, dir string) (string, error) {
	path, err := t.c.WriteForCheck(snap, dir, func() map[string][]byte { return t.selected(snap) },
		func() ([]byte, error) { return t.output(context.Background(), snap) })
	return path, publicError(err)
}
