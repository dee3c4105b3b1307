package main

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/zkclient"
)

// undoableError is a rollout that did not complete after this command
// published a generation: it carries the command that rolls the root back
// to the generation live before, and for --json the publish result and
// the rollout. It unwraps to the rolloutError (exit 5).
type undoableError struct {
	err       error
	undo      string // "" when nothing was live before
	published map[string]any
	rollout   map[string]any
}

func (e undoableError) Error() string {
	if e.undo == "" {
		return e.err.Error()
	}
	return e.err.Error() + "\nto undo it: " + e.undo
}

func (e undoableError) Unwrap() error { return e.err }

// addJSON adds the rollout, the undo command and the publish result to a
// --json failure object.
func (e undoableError) addJSON(obj map[string]any) {
	obj["rollout"] = e.rollout
	if e.undo != "" {
		obj["rollback_command"] = e.undo
	}
	if e.published != nil {
		delete(e.published, "ok")
		obj["published"] = e.published
	}
}

// reportAndWait prints a publish or rollback result and, with --wait,
// follows the rollout. With --json one object is printed: the result with
// the rollout as "rollout", or the failure with the result as "published".
// A failed wait names the command that undoes the publish.
func (a *app) reportAndWait(ctx context.Context, cmd *cobra.Command, p *publish.Publisher, cl *zkclient.Client, res *publish.Result, rollbackOf int64) error {
	if !a.v.GetBool("wait") || res.DryRun {
		a.reportResult(p.Root(), res, rollbackOf)
		return nil
	}
	// Found before the wait, which may end at the command's deadline.
	undo := ""
	if !res.Unchanged {
		if prev, err := previousGeneration(ctx, p, res.Generation); err != nil {
			a.log.Warn("cannot find the generation this publish replaced", "error", err)
		} else if prev > 0 {
			undo = a.rollbackCommandLine(cmd, prev)
		}
	}
	a.holdJSON = a.json()
	a.reportResult(p.Root(), res, rollbackOf)
	a.holdJSON = false
	held := a.held
	err := a.waitRollout(ctx, cl, res.Generation)
	if err != nil && !errors.As(err, new(rolloutError)) {
		return err
	}
	rollout := rolloutJSON(a.rollout, err)
	if err != nil {
		return undoableError{err: err, undo: undo, published: held, rollout: rollout}
	}
	if held != nil {
		held["rollout"] = rollout
		a.writeJSON(held)
	}
	return nil
}

// previousGeneration is the generation that was live before generation g
// was published: the newest retained generation below g (0: none).
func previousGeneration(ctx context.Context, p *publish.Publisher, g int64) (int64, error) {
	gens, err := p.Generations(ctx)
	if err != nil {
		return 0, err
	}
	var prev int64
	for _, h := range gens {
		if h < g {
			prev = h
		}
	}
	return prev, nil
}

// rollbackCommandLine is the confpush command rolling the root back to
// generation g, with the connection flags given on this command line
// (root always; meta when not the default).
func (a *app) rollbackCommandLine(cmd *cobra.Command, g int64) string {
	parts := []string{"confpush"}
	add := func(flag string) {
		parts = append(parts, "--"+flag, shellQuote(a.v.GetString(flag)))
	}
	for _, f := range []string{"config", "zk"} {
		if cmd.Flags().Changed(f) {
			add(f)
		}
	}
	add("root")
	if a.v.GetString("meta") != layout.DefaultMeta {
		add("meta")
	}
	for _, f := range []string{"auth-file", "tls-ca-file", "tls-cert-file", "tls-key-file", "tls-server-name"} {
		if cmd.Flags().Changed(f) {
			add(f)
		}
	}
	return strings.Join(append(parts, "rollback", "--to", strconv.FormatInt(g, 10)), " ")
}

// shellSafe compiles at first use (an undo hint): initialisation runs at
// every start.
var shellSafe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`) })

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if shellSafe().MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// rolloutJSON is a rollout's result for --json: whether it completed and
// which agents applied the generation, are pending, failing (with their
// errors), gone or untrusted.
func rolloutJSON(pr *fleet.Progress, err error) map[string]any {
	obj := map[string]any{"complete": err == nil}
	var re *fleet.RolloutError
	if errors.As(err, &re) {
		p := re.Progress
		pr = &p
		if len(re.Errors) > 0 {
			obj["errors"] = re.Errors
		}
	}
	if pr != nil {
		obj["generation"] = pr.Generation
		obj["needed"] = pr.Needed
		obj["applied"] = nonNil(pr.Applied)
		obj["pending"] = nonNil(pr.Pending)
		obj["failing"] = nonNil(pr.Rejected)
		obj["gone"] = nonNil(pr.Gone)
		obj["not_started"] = nonNil(pr.NotStarted)
		obj["untrusted"] = nonNil(pr.Untrusted)
	}
	return obj
}
