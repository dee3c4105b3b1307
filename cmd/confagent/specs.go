package main

import (
	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/internal/targets"
)

// agentSpecs converts the configuration's target specs (package
// targets', which cmd/internal/config returns so that confpush reads
// agent configurations without linking the agent) to the agent's, field
// by field.
func agentSpecs(specs []targets.Spec) []agent.TargetSpec {
	out := make([]agent.TargetSpec, len(specs))
	for i, s := range specs {
		out[i] = agent.TargetSpec{
			Name: s.Name, Kind: s.Kind, Dest: s.Dest, Item: s.Item, Items: s.Items, Prefix: s.Prefix,
			DirMode: s.DirMode, Template: s.Template, TemplatePath: s.TemplatePath, MissingKey: s.MissingKey,
			Mode: s.Mode, UID: s.UID, GID: s.GID, Check: s.Check, Reload: s.Reload, Timeout: s.Timeout,
			FollowSymlink: s.FollowSymlink, Grace: s.Grace, RenderTimeout: s.RenderTimeout, RenderSteps: s.RenderSteps,
			Syntax: s.Syntax, Confd: agent.ConfdResource{Root: s.Confd.Root, Prefix: s.Confd.Prefix, Keys: s.Confd.Keys},
			Root: s.Root, Roots: s.Roots,
		}
	}
	return out
}
