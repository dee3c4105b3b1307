// Package offline renders the targets of an agent configuration from a
// set of items on disk, as the agent renders a generation, without
// ZooKeeper: confagent render and confpush publish --render-with. It uses
// the agent's own rendering code (package internal/targets, which the
// agent's Renderer wraps: agent.Renderer.RenderTo runs the same code): what
// renders here renders on the host, and what fails here fails there, given
// the same host facts (hostname, labels, environment: this machine's
// hostname and environment, the configuration's labels). It does not
// import package agent, so confpush does not link the agent's daemon,
// metrics and cache (internal/apicheck checks).
package offline

import (
	"context"
	"fmt"
	"slices"

	"github.com/zkconf/zkconf/cmd/internal/config"
	"github.com/zkconf/zkconf/internal/targets"
)

// Generation is the generation number an offline render renders as (the
// template helper generation): no generation is assigned before a
// publish.
const Generation = 0

// Renderer is an agent configuration's targets, compiled.
type Renderer struct {
	// Config is the configuration, as config.LoadForRender read it.
	Config *config.Config
	r      *targets.Offline
	specs  []targets.Spec
}

// Load reads the agent configuration at path (config.LoadForRender: the
// host-only settings are not checked) and compiles its targets. Every
// problem is reported at once.
func Load(path string) (*Renderer, error) {
	cfg, err := config.LoadForRender(path)
	if err != nil {
		return nil, err
	}
	specs, err := cfg.TargetSpecs()
	if err != nil {
		return nil, err
	}
	r, err := targets.CompileOffline(specs, cfg.Labels)
	if err != nil {
		return nil, err
	}
	return &Renderer{Config: cfg, r: r, specs: specs}, nil
}

// Render renders items for the targets named (all when names is empty)
// below dir, one sub-directory per target, and with check runs each
// rendered target's check command against its output; see
// agent.Renderer.RenderTo.
func (r *Renderer) Render(ctx context.Context, items map[string][]byte, dir string, names []string, check bool) ([]targets.Rendered, error) {
	return r.r.RenderTo(ctx, targets.NewSnapshot(Generation, items), dir, names, check)
}

// Several reports whether the configuration follows several roots (each
// target renders its own root's set: RenderRoots).
func (r *Renderer) Several() bool { return len(r.Config.Roots) > 1 }

// RootsNeeded returns the roots the targets named (all when names is
// empty) read, their own and those a template lists, sorted.
func (r *Renderer) RootsNeeded(names []string) []string {
	var out []string
	for _, s := range r.specs {
		if len(names) > 0 && !slices.Contains(names, s.Name) {
			continue
		}
		for _, root := range append([]string{s.Root}, s.Roots...) {
			if !slices.Contains(out, root) {
				out = append(out, root)
			}
		}
	}
	slices.Sort(out)
	return out
}

// RenderRoots is Render for a configuration that follows several roots:
// roots holds each root's set by name (targets.NewRootsSnapshot).
func (r *Renderer) RenderRoots(ctx context.Context, roots map[string]map[string][]byte, dir string, names []string, check bool) ([]targets.Rendered, error) {
	return r.r.RenderTo(ctx, targets.NewRootsSnapshot(Generation, roots), dir, names, check)
}

// Failures returns one error per target of results that did not render,
// or whose check failed, each naming the target once.
func Failures(results []targets.Rendered) []error {
	var errs []error
	for _, res := range results {
		switch {
		case res.Err != nil:
			errs = append(errs, fmt.Errorf("target %q: %w", res.Target, res.Err))
		case res.CheckErr != nil:
			// A *targets.CommandError names the target already.
			errs = append(errs, res.CheckErr)
		}
	}
	return errs
}
