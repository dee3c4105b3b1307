package manifest

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/zkconf/zkconf/internal/labelsel"
)

// Selection says which agents a canary exposes: those whose labels match
// Selector (all of them when it is empty) and, when Percent is above zero,
// whose Bucket is below Percent% of the buckets. The labels an agent is
// matched with are its configured labels plus "hostname" and "agent" (its
// agent id), so explicit ids are the selector "agent in (a,b)".
type Selection struct {
	// Selector is a label selector in Kubernetes syntax ("zone=a,role=web",
	// "zone in (a,b)", "zone!=b", "!canary-exempt"), "" for every agent.
	Selector string `json:"selector,omitempty"`
	// Percent, when above zero, keeps only the agents whose Bucket is below
	// Percent*100: the same agents stay in as Percent grows. At most two
	// decimals (0.01 % is one bucket of 10,000).
	Percent float64 `json:"percent,omitempty"`
}

// Buckets is the number of percentage buckets: 0.01 % each.
const Buckets = 10000

// Bucket is the agent's percentage bucket, in [0, Buckets): a stable hash of
// its id alone, so an agent is in the same bucket for every root and every
// rollout, and the hosts in a 1 % canary stay in at 10 %.
func Bucket(agentID string) int {
	sum := sha256.Sum256([]byte("zkconf-canary\x00" + agentID))
	// #nosec G115 -- the remainder is below Buckets (10,000): it fits an int.
	return int(binary.BigEndian.Uint64(sum[:8]) % Buckets)
}

// percentBuckets converts a valid percent into buckets.
func percentBuckets(p float64) int { return int(math.Round(p * 100)) }

// LabelAgent and LabelHostname are the labels every agent carries besides
// its configured ones. An agent's configuration may set hostname (a host
// known by another name), never agent.
const (
	LabelAgent    = "agent"
	LabelHostname = "hostname"
)

// Validate reports every problem of the selection: a selector that does
// not parse, a percent outside (0, 100] or with more than two decimals, or
// a selection of every agent (neither selector nor percent: that is a
// plain publish).
func (s Selection) Validate() error {
	var errs []error
	if _, err := labelsel.Parse(s.Selector); err != nil {
		errs = append(errs, err)
	}
	switch {
	case math.IsNaN(s.Percent) || s.Percent < 0 || s.Percent > 100:
		errs = append(errs, fmt.Errorf("canary percent %v is not in (0, 100]", s.Percent))
	case math.Abs(s.Percent*100-math.Round(s.Percent*100)) > 1e-6:
		errs = append(errs, fmt.Errorf("canary percent %v has more than two decimals", s.Percent))
	}
	if s.Selector == "" && s.Percent == 0 {
		errs = append(errs, errors.New("a canary needs a selector, agent ids or a percent (without one it selects every agent: publish without --canary)"))
	}
	return errors.Join(errs...)
}

// Selects reports whether the agent with id and labels is in the selection.
// labels are the agent's configured labels; "agent" is set to id here (and
// "hostname" is expected among labels, as agents report it). A selection
// that does not validate selects nobody.
func (s Selection) Selects(id string, labels map[string]string) bool {
	sel, err := labelsel.Parse(s.Selector)
	if err != nil {
		return false
	}
	view := make(map[string]string, len(labels)+1)
	for k, v := range labels {
		view[k] = v
	}
	view[LabelAgent] = id
	if !sel.Matches(view) {
		return false
	}
	return s.Percent <= 0 || Bucket(id) < percentBuckets(s.Percent)
}

// Widens reports whether next selects every agent s selects, whatever its
// labels: the same selector and a percent at least as high (or none). A
// rollout may only widen, or a host already on the candidate would be
// asked to go back.
func (s Selection) Widens(next Selection) bool {
	if s.Selector != next.Selector {
		return false
	}
	if next.Percent == 0 {
		return true
	}
	return s.Percent != 0 && percentBuckets(next.Percent) >= percentBuckets(s.Percent)
}

// Canary is the rollout announced in a root's data (Manifest.Canary): the
// manifest it sits in is the stable generation, which every agent outside
// the selection follows; agents in the selection, and agents that already
// hold a generation above the stable one, follow the candidate generation
// instead, whose manifest is the data of the candidate node
// (<meta>/roots/<key>/candidate, hash ManifestSHA256) and whose contents
// are the stable items' or the candidate node's children's
// (<meta>/roots/<key>/candidate/<sha256>). See docs/design.md, "Canary
// rollouts".
type Canary struct {
	// Generation is the candidate's, above the stable manifest's.
	Generation int64 `json:"generation"`
	// ManifestSHA256 is the hash of the candidate node's data: a reader
	// that finds anything else there read a rollout that was superseded
	// after its root read, and reads the root again.
	ManifestSHA256 string `json:"manifest_sha256"`
	Selection
	// RolloutID names the rollout (random hex) in the rollout record and
	// the driver's liveness node.
	RolloutID string `json:"rollout_id"`
	// StartedAt and Publisher: when and by whom the candidate was published.
	StartedAt time.Time `json:"started_at"`
	Publisher string    `json:"publisher"`
}

// validate checks a canary against the stable manifest m it sits in.
func (c *Canary) validate(m *Manifest) error {
	var errs []error
	if c.Generation <= m.Generation {
		errs = append(errs, fmt.Errorf("canary generation %d is not above the stable generation %d", c.Generation, m.Generation))
	}
	if !isSHA256Hex(c.ManifestSHA256) {
		errs = append(errs, errors.New("canary: bad manifest_sha256"))
	}
	if c.RolloutID == "" {
		errs = append(errs, errors.New("canary: no rollout_id"))
	}
	if err := c.Selection.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("canary: %w", err))
	}
	return errors.Join(errs...)
}

// Follows says which generation of a root an agent follows: the
// candidate when the root announces a canary that selects the agent, or
// when the agent already holds a generation above the stable one in the
// root's incarnation (it was selected before: a relabelled or narrowed-out
// host keeps the candidate rather than going backwards); the stable
// generation otherwise. heldGeneration and heldIncarnation describe the
// snapshot the agent holds (0 and "" for none). A follower without an id
// (a cache without labels) is in no selection: it follows the stable
// generation unless it already holds a higher one.
func (m *Manifest) Follows(id string, labels map[string]string, heldGeneration int64, heldIncarnation string) (candidate bool) {
	if m.Canary == nil {
		return false
	}
	if heldGeneration > m.Generation && heldIncarnation == m.Incarnation {
		return true
	}
	return id != "" && m.Canary.Selects(id, labels)
}
