package config

import (
	"fmt"
	"os"

	"github.com/zkconf/zkconf/internal/errlist"
	"github.com/zkconf/zkconf/internal/targets"
)

// TargetSpecs turns the validated targets into target specs (confagent
// converts them to agent.TargetSpec),
// reading every template src (again: what the agent renders is the file
// as it is now). Every problem is reported at once.
func (c *Config) TargetSpecs() ([]targets.Spec, error) {
	var errs []error
	specs := make([]targets.Spec, 0, len(c.Targets))
	for _, t := range c.Targets {
		s := targets.Spec{
			Name: t.Name, Kind: string(t.Type), Dest: t.Dest, Item: t.Item, Items: t.Items,
			Mode: t.Mode, UID: t.UID, GID: t.GID, Check: t.Check, Reload: t.Reload,
			Timeout: t.Timeout, FollowSymlink: t.FollowSymlink,
			Grace: t.GracePeriod, MissingKey: t.MissingKey, Prefix: t.SrcDir, DirMode: t.DirMode,
			RenderTimeout: t.RenderTimeout, RenderSteps: t.RenderSteps,
			Root: t.Root, Roots: t.Roots,
		}
		if t.Type == TargetTemplate {
			b, err := os.ReadFile(t.Src)
			if err != nil {
				errs = append(errs, fmt.Errorf("targets %q: src: %w", t.Name, err))
				continue
			}
			s.Template, s.TemplatePath = string(b), t.Src
		}
		if t.Syntax == SyntaxConfd {
			s.Syntax = targets.SyntaxConfd
			s.Confd = targets.Confd{Root: c.Root, Prefix: c.confdPrefix(&t), Keys: t.Keys}
		}
		// The agent replaces {{.src}} as it is spelt; {{ .src }} is the
		// same placeholder to validation (a template with .src).
		if check, err := expandCheck(t.Check, srcPlaceholder); err == nil {
			s.Check = check
		}
		specs = append(specs, s)
	}
	return specs, errlist.Join(errs...)
}
