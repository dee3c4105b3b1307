package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zkconf/zkconf/internal/errlist"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/zkclient"
)

// messageFlag registers --message on a command that makes a generation.
func messageFlag(cmd *cobra.Command) {
	cmd.Flags().StringP("message", "m", "", fmt.Sprintf("who and why, stored with the generation and shown by history (one line, at most %d bytes)", publish.MaxMessageLen))
}

// message returns --message, checked: a bad one is refused before
// anything connects.
func (a *app) message() (string, error) {
	msg := a.v.GetString("message")
	return msg, publish.ValidateMessage(msg)
}

// editFlags registers the flags put and delete share with publish.
func (a *app) editFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	messageFlag(cmd)
	f.Bool("wait", false, "after the commit, wait until the agents applied the generation (see --all, --min)")
	a.rolloutFlags(cmd)
	f.Bool("dry-run", false, "show what would change; write nothing")
	supersedeFlag(cmd)
	allowOldAgentsFlag(cmd)
}

// edit runs one read-modify-write of the live set (publish.Edit: retried
// on conflict at most publish.MaxEditAttempts times), reports it like
// publish does and, with --wait, waits for the rollout.
func (a *app) edit(cmd *cobra.Command, fn func(items map[string][]byte) error, req publish.Request) error {
	ctx, p, cl, done, err := a.session(cmd)
	if err != nil {
		return err
	}
	defer done()
	req.DryRun = a.v.GetBool("dry-run")
	res, err := p.Edit(ctx, fn, req)
	if err != nil {
		return err
	}
	return a.finish(ctx, p, cl, res)
}

// finish prints a publish-like result and, with --wait, follows the
// rollout of its generation.
func (a *app) finish(ctx context.Context, p *publish.Publisher, cl *zkclient.Client, res *publish.Result) error {
	a.reportResult(p.Root(), res, 0)
	if a.v.GetBool("wait") && !res.DryRun {
		return a.waitRollout(ctx, cl, res.Generation)
	}
	return nil
}

func (a *app) putCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "put NAME [FILE | -]",
		Short: "Set one item, keeping the others, as a new generation",
		Long: `Set item NAME to the content of FILE (or of standard input, with "-" or
without FILE) and publish the result as the next generation. NAME is an
item path: conf.d/site.conf puts site.conf in the directory conf.d of the
set (a directory and a file of one name are refused). The live set is
read, NAME added or replaced, and the set published under the compare-and-swap
on the generation read. When another publish lands in between, put reads
again and retries (at most 5 attempts in all), so concurrent puts of
different items all survive; after 5 lost races it exits 3.

An item whose name says its format (.json, .yaml/.yml, .toml) must parse,
unless --no-validate. An empty input is refused unless --allow-empty (in a
pipe, an upstream command that failed usually leaves it empty). Content
identical to the live item is "unchanged".
Without --message the generation's message is "put NAME".

A root that was never published is refused (exit 1, kind not_published,
nothing written) unless --create: after a ZooKeeper wipe, or with a
mistyped --root, a put would otherwise publish a set of this one item, and
every agent following the root would render exactly that.`,
		Example: `  confpush put app.json ./app.json -m "alice: raise pool size (OPS-12)"
  render-config | confpush put app.json - --wait`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			msg, msgErr := a.message()
			data, readErr := a.readItem(cmd, args[1:])
			var vErr error
			switch {
			case readErr != nil:
			case len(data) == 0 && !a.v.GetBool("allow-empty"):
				// An empty input is far more often a failed command at
				// the head of a pipe than an empty file wanted on every
				// host.
				vErr = &publish.InputError{Item: name, Err: fmt.Errorf("the input (%s) is empty: nothing to put; an upstream command in a pipe may have failed (--allow-empty puts an empty item)", inputName(args[1:]))}
			default:
				vErr = publish.Validate(map[string][]byte{name: data}, publish.ValidateOptions{Syntax: a.validating()})
			}
			if err := errlist.Join(msgErr, readErr, vErr); err != nil {
				return err
			}
			if msg == "" {
				msg = "put " + name
			}
			return a.edit(cmd, func(items map[string][]byte) error {
				items[name] = data
				return nil
			}, publish.Request{Message: msg, CreateRoot: a.v.GetBool("create"), Supersede: a.v.GetBool("supersede"),
				AllowOldAgents: a.v.GetBool("allow-old-agents")})
		},
	}
	a.editFlags(cmd)
	cmd.Flags().Bool("create", false, "allow the put to create a root that was never published (a set of this item alone)")
	cmd.Flags().Bool("allow-empty", false, "allow an empty input (an empty item); refused otherwise")
	validateFlags(cmd)
	return cmd
}

// inputName names put's input: FILE, or standard input.
func inputName(args []string) string {
	if len(args) == 1 && args[0] != "-" {
		return args[0]
	}
	return "standard input"
}

// readItem reads FILE, or standard input for "-" or no FILE, bounded: a
// larger input than an item can be is refused without reading it all.
// Reading a terminal says so, rather than seeming to hang.
func (a *app) readItem(cmd *cobra.Command, args []string) ([]byte, error) {
	src, what := cmd.InOrStdin(), "standard input"
	if f, ok := src.(*os.File); ok && (len(args) == 0 || args[0] == "-") && isTTY(f) {
		fmt.Fprintln(a.stderr, "confpush: reading the item from the terminal; end with Ctrl-D")
	}
	if len(args) == 1 && args[0] != "-" {
		f, err := os.Open(args[0])
		if err != nil {
			return nil, &publish.InputError{Err: err}
		}
		defer f.Close()
		src, what = f, args[0]
	}
	data, err := io.ReadAll(io.LimitReader(src, publish.ItemLimit+1))
	if err != nil {
		return nil, &publish.InputError{Path: what, Err: err}
	}
	return data, nil
}

func (a *app) deleteCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delete NAME...",
		Short: "Remove items, keeping the others, as a new generation",
		Long: `Remove the items NAME... (item paths) from the live set and publish the
result as the next generation, by read-modify-write under the
compare-and-swap like put (retried at most 5 attempts in all). A NAME
that is not in the live set is an error (exit 2) and nothing is written;
so is a directory of the set: name its items. Deleting the last item is
refused unless --allow-empty. Without --message the generation's message
is "delete NAME...".`,
		Example: `  confpush delete old.conf -m "bob: retired with service X"`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			msg, err := a.message()
			if err != nil {
				return err
			}
			names := slices.Compact(slices.Sorted(slices.Values(args)))
			if msg == "" {
				if msg = "delete " + strings.Join(names, " "); len(msg) > publish.MaxMessageLen {
					msg = fmt.Sprintf("delete %d items", len(names))
				}
			}
			return a.edit(cmd, func(items map[string][]byte) error {
				var errs []error
				for _, n := range names {
					if _, ok := items[n]; !ok {
						if below := itemsBelow(items, n); len(below) > 0 {
							errs = append(errs, &publish.InputError{Item: n, Err: fmt.Errorf("a directory of the live set of %s (%d item(s) below it, %s...), not an item: delete its items by path; nothing deleted",
								a.v.GetString("root"), len(below), below[0])})
							continue
						}
						errs = append(errs, &publish.InputError{Item: n, Err: fmt.Errorf("not in the live set of %s: nothing deleted", a.v.GetString("root"))})
					}
					delete(items, n)
				}
				return errlist.Join(errs...)
			}, publish.Request{Message: msg, AllowEmpty: a.v.GetBool("allow-empty"), Supersede: a.v.GetBool("supersede"),
				AllowOldAgents: a.v.GetBool("allow-old-agents")})
		},
	}
	a.editFlags(cmd)
	cmd.Flags().Bool("allow-empty", false, "allow deleting the last item (publishing an empty set)")
	return cmd
}

// itemsBelow returns the item paths of items below the directory dir
// ("conf.d" or "conf.d/"), sorted.
func itemsBelow[V any](items map[string]V, dir string) []string {
	prefix := strings.TrimSuffix(dir, "/") + "/"
	var out []string
	for n := range items {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// historyMessage is a message as the history table shows it: "-" for none.
// Messages hold no control characters (publish.ValidateMessage), but a
// manifest written by other tools may: those are shown escaped, so that a
// message cannot forge table lines.
func historyMessage(msg string) string {
	if msg == "" {
		return "-"
	}
	if publish.ValidateMessage(msg) != nil {
		return strconv.Quote(msg)
	}
	return msg
}
