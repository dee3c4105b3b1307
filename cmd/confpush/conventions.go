package main

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkconf/zkconf/internal/buildinfo"
	"github.com/zkconf/zkconf/internal/clidoc"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
)

// examples returns every command's Examples section, by command path without
// "confpush" ("" is the root). TestCLIExamples fails for a command that
// has none: add its entry here.
func examples() map[string]string {
	return clidoc.WithCompletionExamples("confpush", map[string]string{
		"": `  confpush --zk zk1:2181,zk2:2181 --root /config/web publish ./web-config
  confpush history
  confpush --version`,
		"publish": `  # Publish a directory as the next generation, wait for every agent
  confpush publish ./web-config --wait
  # Show what would change, write nothing
  confpush publish ./web-config --dry-run
  # Publish only if nobody published since generation 41
  confpush publish ./web-config --expect-generation 41
  # Say who and why; allow removing items deleted from the directory
  confpush publish ./web-config --prune -m "alice: drop old vhost (OPS-12)"
  # Canary: only the agents labelled zone=a get the new set first
  confpush publish ./web-config --canary zone=a -m "alice: new pool size"
  # Canary on 5 % of the agents, or on two named hosts
  confpush publish ./web-config --canary-percent 5
  confpush publish ./web-config --canary-agents web-1,web-2
  # Replace whatever rollout is in progress
  confpush publish ./web-config --supersede
  # Canary driven to the end: abort on the first failing canary host,
  # promote after 10 minutes of every canary host healthy
  confpush publish ./web-config --canary zone=a --auto --bake 10m
  # 1 %, then 10 %, then 50 % of zone=a, 15 minutes each, then everyone
  confpush publish ./web-config --canary zone=a --steps 1%,10%,50% --bake 15m`,
		"import": `  # In place: show what would be taken and what not, then import
  confpush --root /myapp import --from-tree /myapp --dry-run
  confpush --root /myapp import --from-tree /myapp -m "from confd (OPS-7)"
  # A copy under another root, the tree left as it is
  confpush --root /config/myapp import --from-tree /myapp`,
		"rollout": `  confpush rollout status
  confpush rollout widen --canary-percent 25
  confpush rollout promote -m "canary clean for 1h" --wait
  confpush rollout abort -m "5xx up on canary hosts"`,
		"rollout status": `  # Where every agent is, and who started the rollout
  confpush rollout status
  confpush rollout status --json | jq '.counts'`,
		"rollout promote": `  # The candidate's content for everyone, then wait for every agent
  confpush rollout promote -m "canary clean" --wait
  # Only if the rollout in progress is still this one
  confpush rollout promote --rollout 3eb152d17df83aec`,
		"rollout abort": `  # Canary hosts back to the stable content (a new generation)
  confpush rollout abort -m "5xx up on canary hosts"`,
		"rollout widen": `  # From 5 % to 25 % of the agents the selector selects (never narrower)
  confpush rollout widen --canary-percent 25`,
		"diff": `  # Live set against a local directory
  confpush diff ./web-config
  # Live set against generation 41
  confpush diff --gen 41
  # What changed between two generations
  confpush diff --from 41 --to 42`,
		"get": `  # List the live items with sizes and sha256
  confpush get
  # Print one item of generation 41
  confpush get app.json --gen 41
  # An item in a sub-directory of the set
  confpush get conf.d/site.conf`,
		"history": `  confpush history
  confpush history --diff
  # Only the generations that changed an item below conf.d
  confpush history conf.d
  confpush history --json | jq '.generations[0]'`,
		"rollback": `  # Publish generation 41's content again, as a new generation
  confpush rollback --to 41
  confpush rollback --to 41 --dry-run
  # Roll back, say why, and wait for every agent
  confpush rollback --to 41 -m "42 broke checkout (INC-7)" --wait`,
		"status": `  # The agents' state
  confpush status
  # Wait until at least 3 agents applied generation 42
  confpush status --wait-generation 42 --min 3
  # For monitoring: exit 8 when an agent reports an error
  confpush status --fail-on-error
  # Live: redrawn at every change until Ctrl-C
  confpush status --watch`,
		"serve": `  # The read-only dashboard on http://127.0.0.1:8080 (every root under /zkconf)
  confpush --zk zk1:2181 serve
  # Over HTTPS on every interface, item contents shown in diffs
  confpush serve --listen :8443 --tls-cert web.pem --tls-key web.key --show-content`,
		"watch": `  # Publish ./web-config whenever it changes (after 2 s of quiet)
  confpush watch ./web-config --debounce 2s
  # Every change a canary on zone=a, promoted after 10 minutes healthy
  confpush watch ./web-config --canary zone=a --auto --bake 10m`,
		"init": `  confpush init /config/web --publisher-auth-file /etc/zkconf/publisher.auth \
    --agent-auth-file /etc/zkconf/agent.auth`,
		"acl": `  # Compare the ACLs with the policy (exit 7 when they differ)
  confpush acl /config/web --publisher-auth-file /etc/zkconf/publisher.auth --agent-auth-file /etc/zkconf/agent.auth
  # Set every ACL that differs
  confpush acl /config/web --repair --publisher-auth-file /etc/zkconf/publisher.auth --agent-auth-file /etc/zkconf/agent.auth`,
		"digest": `  # An agent's digest for 'confpush init --agent-digest', password never on the command line
  confpush digest < /etc/zkconf/agent.auth`,
		"forget": `  # Remove the registration of a decommissioned host
  confpush forget web-17`,
	})
}

// completionTimeout bounds a completion's whole ZooKeeper round trip: a
// shell waits for it on every TAB, so an unreachable ensemble yields no
// candidates quickly instead of a hung prompt.
const completionTimeout = 3 * time.Second

// conventions gives the command tree what every command needs beyond its
// own behaviour: --version, the completion command with completions from
// the live root, the examples, and the exit-code table in one place.
func (a *app) conventions(root *cobra.Command) {
	root.Version = buildinfo.Get().String("confpush")
	root.SetVersionTemplate("{{.Version}}\n")
	root.InitDefaultVersionFlag()
	// The completion command writes its script to the output it finds
	// when it is made.
	root.SetOut(a.stdout)
	root.InitDefaultCompletionCmd()
	a.registerCompletions(root)
	clidoc.SetExamples(root, examples())
}

// registerCompletions completes item paths (get ITEM; put and delete NAME;
// history PATH), one directory at a time, and generations (every --to, --gen, --from integer flag)
// from the live root, through the same connection flags as the command.
func (a *app) registerCompletions(root *cobra.Command) {
	clidoc.Walk(root, func(c *cobra.Command) {
		switch c.Name() {
		case "get", "put", "delete", "history":
			if c.ValidArgsFunction == nil {
				c.ValidArgsFunction = a.completeItems
			}
		}
		for _, name := range []string{"to", "gen", "from"} {
			if f := c.Flags().Lookup(name); f != nil && strings.HasPrefix(f.Value.Type(), "int") {
				_ = c.RegisterFlagCompletionFunc(name, a.completeGenerations)
			}
		}
	})
}

// completionSession connects for a completion: cobra does not run the
// PersistentPreRunE hook for completions, so the flags, environment and
// --config file are read here. Nothing is logged (the shell would show it).
func (a *app) completionSession(cmd *cobra.Command) (context.Context, func(), bool) {
	if err := a.configure(cmd); err != nil {
		return nil, nil, false
	}
	a.log = slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithTimeout(cmd.Context(), min(completionTimeout, a.v.GetDuration("timeout")))
	return ctx, cancel, true
}

// completeFrom runs list with a connected Publisher; any failure
// (unreachable, refused, not published) offers nothing.
func (a *app) completeFrom(cmd *cobra.Command, list func(context.Context, *publish.Publisher) ([]cobra.Completion, error),
) ([]cobra.Completion, cobra.ShellCompDirective) {
	ctx, cancel, ok := a.completionSession(cmd)
	if !ok {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer cancel()
	p, cl, err := a.connect(ctx, false)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer cl.Conn().Close()
	out, err := list(ctx, p)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

func (a *app) completeItems(cmd *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
	out, directive := a.completeItemPaths(cmd, args, prefix)
	for _, c := range out {
		if strings.HasSuffix(strings.SplitN(c, "\t", 2)[0], "/") {
			// A directory: the shell must not end the word there.
			directive |= cobra.ShellCompDirectiveNoSpace
		}
	}
	return out, directive
}

func (a *app) completeItemPaths(cmd *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		// Only the first argument is an item name (put's second is a file).
		return nil, cobra.ShellCompDirectiveDefault
	}
	return a.completeFrom(cmd, func(ctx context.Context, p *publish.Publisher) ([]cobra.Completion, error) {
		var m *manifest.Manifest
		var err error
		if f := cmd.Flags().Lookup("gen"); f != nil && f.Changed && f.Value.String() != "0" {
			gen, perr := strconv.ParseInt(f.Value.String(), 10, 64)
			if perr != nil {
				return nil, perr
			}
			m, _, err = p.Read(ctx, gen)
		} else {
			m, _, err = p.Current(ctx)
		}
		if err != nil {
			return nil, err
		}
		return completePaths(m, prefix), nil
	})
}

// completePaths completes an item path one directory at a time: the
// items directly below the directory prefix is in, and its
// sub-directories (ending in "/", with the number of items below them),
// so that a tree of many files offers a few choices per level.
func completePaths(m *manifest.Manifest, prefix string) []cobra.Completion {
	var out []cobra.Completion
	dirs := map[string]int{}
	var dirOrder []string
	base := prefix[:strings.LastIndexByte(prefix, '/')+1]
	for _, n := range m.Names() {
		if !strings.HasPrefix(n, prefix) {
			continue
		}
		if i := strings.IndexByte(n[len(base):], '/'); i >= 0 {
			d := n[:len(base)+i+1]
			if dirs[d] == 0 {
				dirOrder = append(dirOrder, d)
			}
			dirs[d]++
			continue
		}
		out = append(out, cobra.CompletionWithDesc(n, fmt.Sprintf("%d bytes", m.Items[n].Size)))
	}
	for _, d := range dirOrder {
		out = append(out, cobra.CompletionWithDesc(d, fmt.Sprintf("directory, %d item(s)", dirs[d])))
	}
	return out
}

func (a *app) completeGenerations(cmd *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
	out, directive := a.completeFrom(cmd, func(ctx context.Context, p *publish.Publisher) ([]cobra.Completion, error) {
		hist, err := p.History(ctx)
		if err != nil {
			return nil, err
		}
		var out []cobra.Completion
		for _, m := range hist {
			if g := strconv.FormatInt(m.Generation, 10); strings.HasPrefix(g, prefix) {
				out = append(out, cobra.CompletionWithDesc(g, fmt.Sprintf("%s by %s, %d items",
					m.PublishedAt.Format(time.RFC3339), m.Publisher, len(m.Items))))
			}
		}
		return out, nil
	})
	// Newest first, as history prints them.
	return out, directive | cobra.ShellCompDirectiveKeepOrder
}

// exitCodesPointer replaces the exit-code table in every command's help but
// the root's, which holds the one table.
const exitCodesPointer = "Exit codes: see 'confpush --help'."
