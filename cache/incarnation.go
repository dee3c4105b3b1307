package cache

import (
	"errors"
	"fmt"
	"slices"
)

// IncarnationPolicy says what a cache does when the root's manifest names
// an incarnation other than the one of the snapshot it holds: the root was
// published anew on a ZooKeeper wiped or rebuilt (or on another ensemble),
// so its generations and zxids started over and cannot be compared with
// the held ones.
type IncarnationPolicy int

const (
	// IncarnationFollow (the default) follows the new incarnation: the held
	// snapshot is replaced by the new incarnation's generation, whatever its
	// number, and the switch is logged (WARN), counted
	// (Stats.IncarnationSwitches, StateInfo.IncarnationSwitches) and its
	// incarnation reported (StateInfo.Incarnation). Never-backwards holds per
	// incarnation: a generation of an incarnation the cache held before is
	// only taken when it is newer than the one it held in it (a flip back
	// to the old ensemble, or a lagging server of it, is refused).
	IncarnationFollow IncarnationPolicy = iota
	// IncarnationRefuse keeps the held snapshot and reports an
	// *IncarnationError (ErrIncarnationRefused) until the application calls
	// Adopt.
	IncarnationRefuse
)

// String returns the policy's configuration name.
func (p IncarnationPolicy) String() string {
	switch p {
	case IncarnationFollow:
		return "follow"
	case IncarnationRefuse:
		return "refuse"
	default:
		return fmt.Sprintf("IncarnationPolicy(%d)", int(p))
	}
}

// ParseIncarnationPolicy parses "follow" or "refuse".
func ParseIncarnationPolicy(s string) (IncarnationPolicy, error) {
	switch s {
	case "follow", "":
		return IncarnationFollow, nil
	case "refuse":
		return IncarnationRefuse, nil
	}
	return 0, fmt.Errorf("incarnation policy %q: want follow or refuse", s)
}

// WithIncarnationPolicy sets what the cache does when the root changes
// incarnation (IncarnationFollow by default).
func WithIncarnationPolicy(p IncarnationPolicy) Option {
	return func(o *options) error {
		if p != IncarnationFollow && p != IncarnationRefuse {
			return fmt.Errorf("cache: unknown incarnation policy %d", int(p))
		}
		o.incarnation = p
		return nil
	}
}

// ErrIncarnationRefused means the root holds another incarnation than the
// held snapshot's and the policy is IncarnationRefuse: the held snapshot is
// served until Adopt. Use errors.As with *IncarnationError for details.
var ErrIncarnationRefused = errors.New("cache: the root holds a new incarnation; refused (incarnation policy refuse) until adopted")

// IncarnationError describes a refused incarnation. It matches
// ErrIncarnationRefused.
type IncarnationError struct {
	// HeldIncarnation and HeldGeneration identify the snapshot kept.
	HeldIncarnation string
	HeldGeneration  int64
	// SeenIncarnation and SeenGeneration are what the root holds.
	SeenIncarnation string
	SeenGeneration  int64
}

// Error names both incarnations.
func (e *IncarnationError) Error() string {
	return fmt.Sprintf("cache: the root holds incarnation %s (generation %d), not the held incarnation %s (generation %d): ZooKeeper was wiped or rebuilt, or this is another ensemble; keeping the held snapshot until an operator adopts the new incarnation",
		e.SeenIncarnation, e.SeenGeneration, orLegacy(e.HeldIncarnation), e.HeldGeneration)
}

// Is makes an *IncarnationError match ErrIncarnationRefused.
func (e *IncarnationError) Is(target error) bool { return target == ErrIncarnationRefused }

func orLegacy(inc string) string {
	if inc == "" {
		return "(none: published before incarnations)"
	}
	return inc
}

// IncarnationMark is the newest generation a cache held of an incarnation
// it left: it never goes back to that incarnation below it.
type IncarnationMark struct {
	Incarnation string `json:"incarnation"`
	Generation  int64  `json:"generation"`
	Zxid        int64  `json:"zxid"`
}

// maxLeft bounds the incarnations remembered (each switch adds one).
const maxLeft = 16

// Incarnation is the incarnation of the root this snapshot belongs to (""
// for a generation published before incarnations existed).
func (s *Snapshot) Incarnation() string { return s.m.Incarnation }

// LeftIncarnations returns the incarnations this snapshot's cache held
// before and left, with the newest generation held in each.
func (s *Snapshot) LeftIncarnations() []IncarnationMark { return slices.Clone(s.left) }

// sameIncarnation reports whether a root read of m at zxid continues the
// held snapshot's history, where generations compare. A manifest without
// an incarnation (written by a publisher older than incarnations) is taken
// as the held one's; a held legacy snapshot continues into the first
// incarnation when the generation and zxid move forward (the root's next
// publish gives it one): that is not a switch.
func (s *Snapshot) sameIncarnation(m *incView) bool {
	held, seen := s.m.Incarnation, m.inc
	return held == seen || seen == "" || (held == "" && s.supersededBy(m.gen, m.zxid))
}

// incView is what the incarnation decision needs of a root read.
type incView struct {
	inc       string
	gen, zxid int64
}

// leftMark returns the mark of incarnation inc if the cache held it before.
func (s *Snapshot) leftMark(inc string) (IncarnationMark, bool) {
	for _, m := range s.left {
		if m.Incarnation == inc {
			return m, true
		}
	}
	return IncarnationMark{}, false
}

// nextLeft is the left list of a snapshot that follows s with incarnation
// inc: unchanged within an incarnation; on a switch s's incarnation is
// remembered (its mark replaced) and inc's forgotten (it is held now).
func (s *Snapshot) nextLeft(inc string) []IncarnationMark {
	if s == nil {
		return nil
	}
	held := s.m.Incarnation
	if held == inc || inc == "" || held == "" {
		return s.left
	}
	out := make([]IncarnationMark, 0, len(s.left)+1)
	for _, m := range s.left {
		if m.Incarnation != held && m.Incarnation != inc {
			out = append(out, m)
		}
	}
	out = append(out, IncarnationMark{Incarnation: held, Generation: s.m.Generation, Zxid: s.zxid})
	if len(out) > maxLeft {
		out = out[len(out)-maxLeft:]
	}
	return out
}
