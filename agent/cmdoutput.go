package agent

import (
	"cmp"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/zkconf/zkconf/internal/targets"
)

// Check and reload commands' output stays on the host by default: it is
// whatever the operator's command prints, and may quote the configuration
// it checked (an item's content). A CommandError's message ends with the
// last line of that output, and the message reaches the target's
// last_error, the agent's last_error and /readyz's reason; the log and
// /status on loopback keep it, while the status node (read by confpush
// status and the dashboard) and /status or /readyz answered beyond
// loopback carry the message without it, unless Options.StatusCommandOutput
// says otherwise (status.command_output).

// withheldOutput replaces a command's output in a message that leaves
// the host.
const withheldOutput = " (output in the agent's log)"

// cmdOutputKept is how many recent failures of each target and command
// kind are remembered for withholding: their messages can still be in the
// status (the last apply's error, a rejection repeated).
const cmdOutputKept = 4

// commandOutputs remembers the messages of recent command failures that
// carry output, to withhold that output from what leaves the host. It has
// its own lock: reading it never waits for an apply.
type commandOutputs struct {
	mu     sync.Mutex
	recent map[string][]*CommandError // target "\x00" kind -> newest last
}

// record notes err's command failures (err may wrap or join several).
func (c *commandOutputs) record(err error) {
	var found []*CommandError
	collectCommandErrors(err, &found)
	if len(found) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.recent == nil {
		c.recent = map[string][]*CommandError{}
	}
	for _, ce := range found {
		if strings.TrimSpace(ce.Output) == "" {
			continue
		}
		k := ce.Target + "\x00" + ce.Kind
		l := append(c.recent[k], ce)
		c.recent[k] = l[max(0, len(l)-cmdOutputKept):]
	}
}

func collectCommandErrors(err error, out *[]*CommandError) {
	switch e := err.(type) {
	case nil:
		return
	case *CommandError:
		*out = append(*out, e)
		return
	case interface{ Unwrap() []error }:
		for _, x := range e.Unwrap() {
			collectCommandErrors(x, out)
		}
		return
	}
	collectCommandErrors(errors.Unwrap(err), out)
}

// withhold returns s with every remembered command failure's message
// replaced by the same message without the command's output.
func (c *commandOutputs) withhold(s Status) Status {
	c.mu.Lock()
	var pairs [][2]string
	for _, l := range c.recent {
		for _, ce := range l {
			pairs = append(pairs, [2]string{ce.Error(), ce.message(false) + withheldOutput})
		}
	}
	c.mu.Unlock()
	if len(pairs) == 0 {
		return s
	}
	// The longest first: a message that is a prefix of another (the
	// same command, a longer output line) must not cut it.
	slices.SortFunc(pairs, func(a, b [2]string) int { return cmp.Compare(len(b[0]), len(a[0])) })
	var args []string
	for _, p := range pairs {
		args = append(args, p[0], p[1])
	}
	r := strings.NewReplacer(args...)
	s.LastError, s.NotReadyReason = r.Replace(s.LastError), r.Replace(s.NotReadyReason)
	s.Targets = slices.Clone(s.Targets)
	for i := range s.Targets {
		s.Targets[i].LastError = r.Replace(s.Targets[i].LastError)
	}
	return s
}

// shareOutput reports whether command output may leave the host in what
// answers req: with status.command_output, or to a client on loopback.
func (d *Daemon) shareOutput(req *http.Request) bool {
	d.mu.Lock()
	opt := d.opts.StatusCommandOutput
	d.mu.Unlock()
	if opt {
		return true
	}
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// nodeStatus is s as the status node carries it: without command output
// unless status.command_output is set.
func (d *Daemon) nodeStatus(s Status) Status {
	d.mu.Lock()
	opt := d.opts.StatusCommandOutput
	d.mu.Unlock()
	if opt {
		return s
	}
	return d.r.cmdOut.withhold(s)
}

// message is the error's message, with the last line of the command's
// output when withOutput is set (what Error returns).
func (e *CommandError) message(withOutput bool) string {
	return (*targets.CommandError)(e).Message(withOutput)
}
