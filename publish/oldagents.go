package publish

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/manifest"
)

// ErrOldAgents means the set needs a newer manifest format than agents
// the root expects report reading (a set with item paths needs
// manifest.FormatTree). The error is an *OldAgentsError naming them.
// Nothing was written.
var ErrOldAgents = errors.New("agents of the root cannot read the manifest format the set needs")

// OldAgent is an expected agent that reports reading an older manifest
// format than a publish needs.
type OldAgent struct {
	ID string `json:"id"`
	// Version is the agent's release as it reports it ("" when it does
	// not say).
	Version string `json:"version,omitempty"`
	// MaxFormat is the highest format it reports reading; 0 when it
	// reports none (a release older than config trees, which reads
	// format 1 only).
	MaxFormat int `json:"max_format"`
}

// OldAgentsError reports the expected agents of a root that cannot read
// the manifest a publish would write. It matches ErrOldAgents.
type OldAgentsError struct {
	// Root is the config root.
	Root string
	// Format is the manifest format the set needs.
	Format int
	// Agents are the agents reading less, sorted by id.
	Agents []OldAgent
}

// Error names the agents (the first 20, and how many more) with what
// they report, and what to do.
func (e *OldAgentsError) Error() string {
	const shown = 20
	var b strings.Builder
	for i, a := range e.Agents[:min(len(e.Agents), shown)] {
		if i > 0 {
			b.WriteString(", ")
		}
		version := a.Version
		if version == "" {
			version = "version unknown"
		}
		if a.MaxFormat == 0 {
			fmt.Fprintf(&b, "%s (%s, reports no max_format: older than config trees)", a.ID, version)
		} else {
			fmt.Fprintf(&b, "%s (%s, reads up to format %d)", a.ID, version, a.MaxFormat)
		}
	}
	if len(e.Agents) > shown {
		fmt.Fprintf(&b, " and %d more", len(e.Agents)-shown)
	}
	return fmt.Sprintf("refusing to publish: the set needs manifest format %d (item paths with '/'), which %d agent(s) of %s cannot read: %s; upgrade them first, or publish anyway (--allow-old-agents; AllowOldAgents): they keep the generation they have and report the refusal",
		e.Format, len(e.Agents), e.Root, b.String())
}

// Is makes errors.Is(err, ErrOldAgents) true.
func (e *OldAgentsError) Is(target error) bool { return target == ErrOldAgents }

// refuseOldAgents refuses a manifest of format format while an agent the
// root expects (registered, named by the access policy, or with a
// trusted status node: whom --wait --all waits for) reports reading less,
// from its status node or, when it is away, its registration. An
// identity that never reported (neither) is not counted: nothing says
// what it runs. Format 1 needs no read of the fleet.
func (p *Publisher) refuseOldAgents(ctx context.Context, format int, allow bool) error {
	if format <= manifest.FormatVersion || allow {
		return nil
	}
	fl, err := fleet.New(p.cl, p.paths.Root, fleet.WithMeta(p.paths.Meta))
	if err != nil {
		return err
	}
	agents, err := fl.List(ctx)
	if err != nil {
		return fmt.Errorf("reading which manifest format the agents of %s read (the set needs format %d): %w", p.paths.Root, format, err)
	}
	var old []OldAgent
	for _, a := range agents {
		if !a.Expected {
			continue
		}
		if version, maxFormat, reported := a.Reads(); reported && maxFormat < format {
			old = append(old, OldAgent{ID: a.ID, Version: version, MaxFormat: maxFormat})
		}
	}
	if len(old) > 0 {
		return &OldAgentsError{Root: p.paths.Root, Format: format, Agents: old}
	}
	return nil
}
