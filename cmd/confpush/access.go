package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/spf13/cobra"

	"github.com/zkconf/zkconf/cmd/confpush/internal/access"
	"github.com/zkconf/zkconf/internal/aclmodel"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/zkclient"
)

// aclMismatchError marks ACLs that differ from the policy and were not
// (or could not be) repaired (exit 7).
type aclMismatchError struct {
	n int
	// report is the --json report, carried in the error object so that
	// --json prints one object.
	report map[string]any
}

// openTreeError is acl on a root confpush init never set up (exit 7):
// there is no policy to compare with, and nothing bounds the tree.
type openTreeError struct{ err error }

func (e openTreeError) Error() string { return e.err.Error() }
func (e openTreeError) Unwrap() error { return e.err }

func (e aclMismatchError) Error() string {
	return fmt.Sprintf("%d ACL difference(s) from the policy; run 'confpush acl ROOT --repair'", e.n)
}

// policyFlags adds the flags that name a policy (init, acl).
func policyFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.String("publisher-auth-file", "", "file holding the publisher's user:password (mode 0600; default --auth-file, $ZKCONF_AUTH)")
	f.StringArray("agent-auth-file", nil, "file holding an agent's user:password, hashed at once (repeatable)")
	f.StringArray("agent-digest", nil, "an agent identity as user:digest, see 'confpush digest' (repeatable)")
	f.Bool("world-readable", false, "let anyone, unauthenticated, read the root and its items (nothing else)")
}

// stringList is a repeatable flag's values, or the configuration file's
// list (or environment variable) when the flag is not given.
func (a *app) stringList(cmd *cobra.Command, name string) []string {
	if f := cmd.Flags().Lookup(name); f != nil && f.Changed {
		vals, _ := cmd.Flags().GetStringArray(name)
		return vals
	}
	return a.v.GetStringSlice(name)
}

// publisherCreds returns the publisher's credentials: --publisher-auth-file,
// else --auth-file or $ZKCONF_AUTH.
func (a *app) publisherCreds() (string, error) {
	creds := a.auth
	if file := a.v.GetString("publisher-auth-file"); file != "" {
		var err error
		if creds, err = zkclient.LoadAuth(file); err != nil {
			return "", usagef("--publisher-auth-file: %v", err)
		}
	}
	if creds == "" {
		return "", usagef("the publisher's credentials are required: --publisher-auth-file, --auth-file or $ZKCONF_AUTH")
	}
	return creds, nil
}

// policy builds the policy of the flags. explicit reports whether any
// agent or --world-readable was given (acl reads the policy from the
// root otherwise).
func (a *app) policy(cmd *cobra.Command, publisher aclmodel.Identity) (p access.Policy, explicit bool, err error) {
	p = access.Policy{Publisher: publisher, WorldReadable: a.v.GetBool("world-readable")}
	var problems []string
	for _, file := range a.stringList(cmd, "agent-auth-file") {
		creds, err := zkclient.LoadAuth(file)
		if err == nil && creds == "" {
			err = errors.New("empty file")
		}
		if err == nil {
			var id aclmodel.Identity
			if id, err = aclmodel.ParseIdentity(creds); err == nil {
				p.Agents = append(p.Agents, id)
			}
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("--agent-auth-file %s: %v", file, err))
		}
	}
	for i, d := range a.stringList(cmd, "agent-digest") {
		id, err := aclmodel.ParseDigestIdentity(d)
		if err != nil {
			// The value is a digest, not a password, but quote only
			// its position.
			problems = append(problems, fmt.Sprintf("--agent-digest #%d: %v", i+1, err))
			continue
		}
		p.Agents = append(p.Agents, id)
	}
	if len(problems) > 0 {
		return p, false, usagef("%s", strings.Join(problems, "; "))
	}
	explicit = len(p.Agents) > 0 || p.WorldReadable
	if explicit {
		if err := p.Validate(); err != nil {
			return p, true, usagef("policy: %v", err)
		}
	}
	return p, explicit, nil
}

// rootArg makes the ROOT argument, when given, the configured root.
func (a *app) rootArg(args []string) error {
	if len(args) == 0 {
		return nil
	}
	if err := layout.ValidateRoot(args[0]); err != nil {
		return usagef("ROOT: %v", err)
	}
	a.v.Set("root", args[0])
	return nil
}

// dialAs connects with creds as the session's identity. The credentials
// of --auth-file or $ZKCONF_AUTH, when they differ, are added too: a
// session holding the old and the new publisher credentials is how the
// publisher's password is changed.
func (a *app) dialAs(ctx context.Context, creds string) (*zk.Conn, error) {
	cfg := a.zkConfig()
	cfg.Auth = creds
	cl, err := a.dialWith(ctx, cfg)
	if err != nil {
		return nil, err
	}
	conn := cl.Conn()
	if a.auth != "" && a.auth != creds {
		if err := conn.AddAuth("digest", []byte(a.auth)); err != nil {
			conn.Close()
			return nil, zkclient.Explain(err, "", "add credentials")
		}
	}
	return conn, nil
}

func (a *app) initCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "init ROOT --publisher-auth-file F [--agent-digest user:digest]... [--agent-auth-file F]... [--world-readable]",
		Short: "Set up ZooKeeper ACLs for a root: publisher, agents, nobody else",
		Long: `Create ROOT (empty), its missing ancestors and its metadata tree (history,
blobs, publishing, status, election, the agent registry and each agent
identity's registry node) with digest ACLs: the publisher may do everything;
each agent identity may read the root and its items, create and write only
its own status node and write its registry node; anyone else may do nothing
(or, with --world-readable, read the root and its items). On an existing tree
it sets every ACL that differs (idempotent): this also locks down a tree
published before ACLs. The agent list is complete: an identity left out loses
access.

It also sets ZooKeeper quotas that bound what each agent identity can write
(no status node under a name that is not an agent identity's; each agent's
status node at most 128 KiB, its registration 16 KiB), with the quota nodes
and /zookeeper/quota locked to the publisher, and says so when the servers
do not enforce them: run every server with -Dzookeeper.enforceQuota=true
(ZooKeeper 3.7+; docs/install.md).

Credentials never come from an argument: the publisher's from
--publisher-auth-file (else --auth-file or $ZKCONF_AUTH), agents as digests
(--agent-digest, see 'confpush digest') or from files (--agent-auth-file).
Passwords must be at least 16 characters. See docs/security.md.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			creds, _, pol, _, err := a.publisherPolicy(cmd, args)
			if err != nil {
				return err
			}
			if err := pol.Validate(); err != nil {
				return usagef("policy: %v", err)
			}
			ctx, cancel := a.context(cmd)
			defer cancel()
			conn, err := a.dialAs(ctx, creds)
			if err != nil {
				return err
			}
			defer conn.Close()
			rep, err := access.Init(ctx, conn, a.paths(), pol)
			if err != nil {
				return err
			}
			return a.reportACL("init", pol, rep.Actions, rep.Remaining, nil)
		},
	}
	policyFlags(cmd)
	return cmd
}

// publisherPolicy takes the root argument, the publisher's credentials and
// identity, and the policy the flags give (explicit false: none given), as
// init and acl both need them.
func (a *app) publisherPolicy(cmd *cobra.Command, args []string) (creds string, pub aclmodel.Identity, pol access.Policy, explicit bool, err error) {
	if err = a.rootArg(args); err != nil {
		return
	}
	if creds, err = a.publisherCreds(); err != nil {
		return
	}
	if pub, err = aclmodel.ParseIdentity(creds); err != nil {
		err = usagef("publisher credentials: %v", err)
		return
	}
	pol, explicit, err = a.policy(cmd, pub)
	return
}

func (a *app) aclCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "acl [ROOT] [--repair]",
		Short: "Show (and with --repair fix) the ACLs of a root against its policy",
		Long: `Compare the ACL of the root (ROOT, default --root), every item, the marker
and the whole metadata tree with the policy, and print each difference,
naming identities by user and role, never by digest. The policy is read from
the root's own ACL (the publisher is the identity of --publisher-auth-file,
else --auth-file or $ZKCONF_AUTH); when the root's ACL is not one 'confpush
init' makes, give the policy with the same flags as init.

Without --repair, exits 7 when differences are found (advisories, which no
ACL can fix, do not count). With --repair, fixes them as init does (but never
creates the root) and exits 7 only if some remain. Status and registry nodes
that are not provably their agent's (ACL not exactly the one its identity
gives, not ephemeral, unreadable, above their size bound, or named after no
agent identity) are differences; --repair deletes them. The quotas init sets
are checked too (limits, ACLs of their nodes and of /zookeeper/quota, quotas
of identities no longer in the policy) and restored by --repair; quotas
zkconf did not set on the root's or the metadata's paths, and servers that
do not enforce quotas, are advisories. On an open root (init never ran) it
says what that leaves unbounded and exits 7.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			creds, pub, pol, explicit, err := a.publisherPolicy(cmd, args)
			if err != nil {
				return err
			}
			ctx, cancel := a.context(cmd)
			defer cancel()
			conn, err := a.dialAs(ctx, creds)
			if err != nil {
				return err
			}
			defer conn.Close()
			paths := a.paths()
			if !explicit {
				if pol, err = access.PolicyFromRoot(ctx, conn, paths, pub); err != nil {
					if errors.Is(err, access.ErrOpenTree) {
						return openTreeError{err}
					}
					if errors.Is(err, access.ErrForeignACL) {
						return fmt.Errorf("%w; give the policy with --agent-digest/--agent-auth-file/--world-readable", err)
					}
					return err
				}
			}
			found, err := access.Check(ctx, conn, paths, pol)
			if err != nil {
				return err
			}
			if !a.v.GetBool("repair") {
				return a.reportACL("acl", pol, nil, found, nil)
			}
			rep, err := access.Repair(ctx, conn, paths, pol)
			if err != nil {
				return err
			}
			return a.reportACL("acl", pol, rep.Actions, rep.Remaining, found)
		},
	}
	policyFlags(cmd)
	cmd.Flags().Bool("repair", false, "set every ACL that differs from the policy (never creates the root)")
	return cmd
}

// reportACL prints what init or acl found and did, without any digest.
// Differences that remain are an aclMismatchError (exit 7), which carries
// the report for --json.
func (a *app) reportACL(command string, pol access.Policy, actions []access.Action, remaining, before []access.Mismatch) error {
	agents := []string{}
	for _, id := range pol.Agents {
		agents = append(agents, id.User)
	}
	lines := func(items []fmt.Stringer) []string {
		out := []string{}
		for _, it := range items {
			out = append(out, it.String())
		}
		return out
	}
	acts := make([]fmt.Stringer, len(actions))
	for i := range actions {
		acts[i] = actions[i]
	}
	var diffs, advisories []fmt.Stringer
	for _, m := range remaining {
		if m.Repairable() {
			diffs = append(diffs, m)
		} else {
			advisories = append(advisories, m)
		}
	}
	obj := map[string]any{
		"root": a.paths().Root, "publisher": pol.Publisher.User, "agents": agents,
		"world_readable": pol.WorldReadable, "actions": lines(acts),
		"differences": lines(diffs), "advisories": lines(advisories),
	}
	if before != nil {
		obj["found"] = len(before)
	}
	text := func(w io.Writer) {
		world := ""
		if pol.WorldReadable {
			world = ", world-readable"
		}
		fmt.Fprintf(w, "%s %s: publisher %s, %d agent identit%s%s\n", command, a.paths().Root, pol.Publisher.User,
			len(agents), map[bool]string{true: "y", false: "ies"}[len(agents) == 1], world)
		for _, s := range lines(acts) {
			fmt.Fprintf(w, "  done: %s\n", s)
		}
		for _, s := range lines(diffs) {
			fmt.Fprintf(w, "  differs: %s\n", s)
		}
		for _, s := range lines(advisories) {
			fmt.Fprintf(w, "  advisory: %s\n", s)
		}
		if len(actions) == 0 && len(diffs) == 0 {
			fmt.Fprintln(w, "  ACLs match the policy")
		}
	}
	if len(diffs) > 0 {
		if !a.json() {
			text(a.stdout)
		}
		return aclMismatchError{n: len(diffs), report: obj}
	}
	a.emit(obj, text)
	return nil
}

func (a *app) digestCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "digest < CREDENTIALS",
		Short: "Print user:digest for the user:password read on standard input",
		Long: `Read one line "user:password" on standard input (e.g. an agent's credentials
file) and print "user:digest", the form 'confpush init --agent-digest' takes:
digest = base64(sha1("user:password")), as ZooKeeper stores it. The password
is never an argument (visible in ps) and is never printed. Passwords shorter
than 16 characters are refused.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			line, err := bufio.NewReader(io.LimitReader(cmd.InOrStdin(), 4096)).ReadString('\n')
			if err != nil && !errors.Is(err, io.EOF) {
				return fmt.Errorf("read standard input: %w", err)
			}
			line = strings.TrimRight(line, "\r\n")
			if line == "" {
				return usagef("no credentials on standard input (want one line user:password)")
			}
			id, err := aclmodel.ParseIdentity(line)
			if err != nil {
				return usagef("credentials on standard input: %v", err)
			}
			a.emit(map[string]any{"user": id.User, "digest": id.Digest, "id": id.ID()}, func(w io.Writer) {
				fmt.Fprintln(w, id.ID())
			})
			return nil
		},
	}
}
