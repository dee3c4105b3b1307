package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/zkconf/zkconf/cache"
	"github.com/zkconf/zkconf/internal/promtext"
	"github.com/zkconf/zkconf/manifest"
)

// AdoptFileName is the file, in StateDir, through which `confagent adopt`
// tells the agent (running, or at its next start) to follow the root's new
// incarnation (Options.Incarnation cache.IncarnationRefuse). It holds an
// incarnation id, or nothing for "the one refused now". The agent removes
// it once handed to the cache. A file, not a request to the HTTP listener:
// it works for a stopped agent, needs no listener, and only who can write
// the state directory (the agent's user, root) can adopt.
const AdoptFileName = "adopt-incarnation"

// WriteAdopt writes the adopt request into stateDir (atomically: temporary
// file and rename, so the agent never reads half of it). inc is an
// incarnation id or "" (the incarnation the agent refuses now).
func WriteAdopt(stateDir, inc string) error {
	if inc != "" && !manifest.ValidIncarnation(inc) {
		return fmt.Errorf("incarnation %q is not an incarnation id (32 lower-case hex digits)", inc)
	}
	if fi, err := os.Stat(stateDir); err != nil || !fi.IsDir() {
		return fmt.Errorf("state dir %s: not a directory the agent created (%v)", stateDir, err)
	}
	tmp, err := os.CreateTemp(stateDir, "."+AdoptFileName+".tmp-*")
	if err != nil {
		return fmt.Errorf("adopt: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(inc + "\n"); err != nil {
		_ = tmp.Close() // the write's error is the one to report
		return fmt.Errorf("adopt: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("adopt: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(stateDir, AdoptFileName)); err != nil {
		return fmt.Errorf("adopt: %w", err)
	}
	return nil
}

// checkAdopt hands a pending adopt request to the cache and removes it.
func (d *Daemon) checkAdopt() {
	if d.opts.NoPersist {
		return
	}
	path := filepath.Join(d.opts.StateDir, AdoptFileName)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err != nil {
		d.log.Error("cannot read the adopt request", "path", path, "error", err)
		return
	}
	inc := strings.TrimSpace(string(b))
	if err := d.follow.Adopt(inc); err != nil {
		d.log.Error("ignoring the adopt request", "path", path, "error", err)
	} else {
		d.log.Warn("adopt requested by an operator: following the root's new incarnation", "incarnation", adoptName(inc))
	}
	if err := os.Remove(path); err != nil {
		d.log.Error("cannot remove the adopt request", "path", path, "error", err)
	}
}

func adoptName(inc string) string {
	if inc == "" {
		return "the one refused now"
	}
	return inc
}

// incarnationStatus fills the status fields about incarnations and the
// ZooKeeper session.
func (d *Daemon) incarnationStatus(st cache.StateInfo, s *Status) {
	s.Incarnation = st.Incarnation
	s.IncarnationSwitches = st.IncarnationSwitches
	var ierr *cache.IncarnationError
	if errors.As(st.Err, &ierr) {
		s.IncarnationRefused = ierr.SeenIncarnation
	}
	zs := d.zk.Session().Status()
	s.SessionsReplaced = zs.Replaced
	s.SessionRefused = errors.Is(st.Err, cache.ErrRefused)
}

// registerIncarnationMetrics adds the incarnation and session metrics.
func (d *Daemon) registerIncarnationMetrics() {
	d.metrics.reg.MustRegister(
		promtext.NewCounterFunc(promtext.Opts{
			Name: "zkconf_agent_incarnation_switches_total",
			Help: "New incarnations of the root (ZooKeeper wiped or rebuilt) the agent followed."},
			func() float64 { return float64(d.follow.Stats().IncarnationSwitches) }),
		promtext.NewGaugeFunc(promtext.Opts{
			Name: "zkconf_agent_incarnation_refused",
			Help: "1 while the agent refuses the root's new incarnation (incarnation: refuse) and waits for confagent adopt."},
			func() float64 {
				if errors.Is(d.follow.State().Err, cache.ErrIncarnationRefused) {
					return 1
				}
				return 0
			}),
		promtext.NewCounterFunc(promtext.Opts{
			Name: "zkconf_agent_zookeeper_sessions_replaced_total",
			Help: "ZooKeeper connections replaced because the servers refused their session (a wiped or rebuilt server)."},
			func() float64 { return float64(d.zk.Session().Status().Replaced) }),
	)
}

// incarnationKey is what of st the status node must show when it changes.
func incarnationKey(st cache.StateInfo) string {
	k := "|" + st.Incarnation
	var ierr *cache.IncarnationError
	if errors.As(st.Err, &ierr) {
		k += "|refused:" + ierr.SeenIncarnation
	}
	if errors.Is(st.Err, cache.ErrRefused) {
		k += "|session-refused"
	}
	return k
}
