package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkconf/zkconf/zkclient"
)

// rootNotFoundError is a command that reports on a root (status, rollout
// status) given a root with no znode: a misspelled --root, or one nothing
// was ever published to. It is bad input (exit 2), never "0 agents, live
// generation 0": a monitoring check on a typo must not stay green.
type rootNotFoundError struct {
	root string
	// followers counts the agents that follow the root all the same
	// (status or registry nodes under its metadata): their root setting
	// names it, and they wait for a first publish.
	followers int
}

func (e rootNotFoundError) Error() string {
	if e.followers > 0 {
		return fmt.Sprintf("root %s does not exist (nothing was ever published there), yet %d agent(s) follow it, waiting for a first publish: "+
			"check --root and the agents' root setting ('confpush publish' creates the root)", e.root, e.followers)
	}
	return fmt.Sprintf("root %s does not exist: nothing was ever published there and no agent follows it; "+
		"check --root ('confpush publish' creates the root)", e.root)
}

// requireRoot fails with a rootNotFoundError when the root has no znode.
// A root that exists without a manifest (after 'confpush init', before a
// first publish) passes: its reports say "never published".
func (a *app) requireRoot(ctx context.Context, cl *zkclient.Client) error {
	p := a.paths()
	ok, _, err := cl.Conn().Exists(p.Root)
	if err != nil {
		return fmt.Errorf("read %s: %w", p.Root, err)
	}
	if ok {
		return nil
	}
	e := rootNotFoundError{root: p.Root}
	// Only on this failure path: count who follows the missing root, so
	// that the message tells a typo of the operator from one in the agents'
	// configuration.
	if f, err := a.fleetOf(cl); err != nil {
		return err
	} else if agents, err := f.List(ctx); err == nil {
		for _, a := range agents {
			if a.HasNode || a.Registration != nil {
				e.followers++
			}
		}
	}
	return e
}

// liveLine is the end of status's summary line: the live generation, or
// that the root was never published.
func liveLine(root string, live int64) string {
	if live == 0 {
		return fmt.Sprintf("root %s, never published", root)
	}
	return fmt.Sprintf("root %s, live generation %d", root, live)
}

// isRootNotFound reports a rootNotFoundError (exit 2, kind root_not_found).
func isRootNotFound(err error) bool { return errors.As(err, new(rootNotFoundError)) }
