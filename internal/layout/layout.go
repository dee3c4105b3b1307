// Package layout names every znode zkconf uses. Keeping the paths in one
// place keeps docs/design.md's layout section true.
//
//	<root>                         data: manifest (JSON); children: items
//	<root>/<item>                  data: the item's bytes
//	<root>/invalid                 exists while a marker-mode publish runs
//	<meta>/roots/<key>/history/g-<generation, 19 digits>
//	                               data: that generation's manifest
//	<meta>/roots/<key>/blobs/<sha256>
//	                               data: item content, stored once per content
//	<meta>/roots/<key>/publishing/<publish id>
//	                               ephemeral: the marker-mode publish is alive
//	<meta>/roots/<key>/status/<agent id>
//	                               ephemeral: what that agent applied
//	<meta>/roots/<key>/election/   confpush watch leader election
//	<meta>/roots/<key>/agents/<agent id>
//	                               persistent: the agent registry (JSON:
//	                               first_seen, last_seen, labels, hostname)
//	<meta>/roots/<key>/candidate   data: a canary rollout's candidate manifest
//	<meta>/roots/<key>/candidate/<sha256>
//	                               data: a candidate content the stable set lacks
//	<meta>/roots/<key>/rollout     data: the rollout record (plan, driver, events)
//	<meta>/roots/<key>/rollout-driver/<rollout id>
//	                               ephemeral: the driving process is alive
//
// <key> is the root path with "/" escaped (RootKey), so that roots nested in
// one another never see each other's metadata as items.
package layout

import (
	"fmt"
	"path"
	"strconv"
	"strings"
)

// DefaultRoot and DefaultMeta are the paths used when none is configured.
const (
	DefaultRoot = "/config"
	DefaultMeta = "/zkconf"
)

// Paths names the znodes of one config root. It is a value type; build it
// with New, which escapes the root key once. A Paths literal, or one whose
// Root or Meta was changed after New, works too: the base is then computed
// on every call.
type Paths struct {
	Root string
	Meta string
	// base is baseOf(root, meta), computed by New for those two values.
	base, root, meta string
}

// New returns the layout of root with its metadata under meta.
func New(root, meta string) Paths {
	return Paths{Root: root, Meta: meta, base: baseOf(root, meta), root: root, meta: meta}
}

func baseOf(root, meta string) string { return meta + "/roots/" + RootKey(root) }

// ValidateRoot checks that p is an absolute ZooKeeper path usable as a root.
func ValidateRoot(p string) error {
	switch {
	case p == "" || p[0] != '/':
		return fmt.Errorf("root %q must be an absolute ZooKeeper path", p)
	case p == "/":
		return fmt.Errorf("root %q: the ZooKeeper root cannot be a config root", p)
	case strings.HasSuffix(p, "/"):
		return fmt.Errorf("root %q must not end with '/'", p)
	case path.Clean(p) != p:
		return fmt.Errorf("root %q is not a clean path (no '.', '..' or '//')", p)
	case p == "/zookeeper" || strings.HasPrefix(p, "/zookeeper/"):
		return fmt.Errorf("root %q is inside ZooKeeper's reserved /zookeeper tree", p)
	}
	return nil
}

// keyEscaper escapes "%" first, then "/" (a Replacer is safe for
// concurrent use).
var keyEscaper = strings.NewReplacer("%", "%25", "/", "%2F")

// RootKey escapes a root path into one node name.
func RootKey(root string) string {
	return keyEscaper.Replace(strings.TrimPrefix(root, "/"))
}

// Item is the znode of item name.
func (p Paths) Item(name string) string { return p.Root + "/" + name }

// Marker is the marker-mode in-progress node.
func (p Paths) Marker() string { return p.Root + "/invalid" }

// Base is the root's metadata node.
func (p Paths) Base() string {
	if p.base != "" && p.Root == p.root && p.Meta == p.meta {
		return p.base
	}
	return baseOf(p.Root, p.Meta)
}

// History is the parent of the history entries.
func (p Paths) History() string { return p.Base() + "/history" }

// HistoryNode is the history entry of generation g. Zero-padding keeps
// lexical order equal to numeric order.
func (p Paths) HistoryNode(g int64) string { return fmt.Sprintf("%s/g-%019d", p.History(), g) }

// ParseHistoryName returns the generation of a history entry's node name.
func ParseHistoryName(name string) (int64, bool) {
	s, ok := strings.CutPrefix(name, "g-")
	if !ok {
		return 0, false
	}
	g, err := strconv.ParseInt(s, 10, 64)
	return g, err == nil && g > 0
}

// Blobs is the parent of the content-addressed item store.
func (p Paths) Blobs() string { return p.Base() + "/blobs" }

// Blob is the node holding content with the given sha256.
func (p Paths) Blob(sha string) string { return p.Base() + "/blobs/" + sha }

// Publishing is the parent of live marker-mode publishes' ephemeral nodes.
func (p Paths) Publishing() string { return p.Base() + "/publishing" }

// PublishingNode is the liveness node of one marker-mode publish.
func (p Paths) PublishingNode(id string) string { return p.Publishing() + "/" + id }

// Status is the parent of the agents' status nodes.
func (p Paths) Status() string { return p.Base() + "/status" }

// StatusNode is agent id's status node.
func (p Paths) StatusNode(agent string) string { return p.Status() + "/" + agent }

// Election is the parent of confpush watch's election nodes.
func (p Paths) Election() string { return p.Base() + "/election" }

// Agents is the parent of the agent registry: one persistent node per agent
// that ever ran, so that a rollout knows who should answer.
func (p Paths) Agents() string { return p.Base() + "/agents" }

// AgentNode is agent id's registry node.
func (p Paths) AgentNode(agent string) string { return p.Agents() + "/" + agent }

// Candidate holds a canary rollout's candidate manifest (its data) and,
// as children, the candidate's contents that the stable set does not hold.
// It exists only while a rollout runs; agents may read it (the root's ACL).
func (p Paths) Candidate() string { return p.Base() + "/candidate" }

// CandidateContent is the candidate content with the given sha256.
func (p Paths) CandidateContent(sha string) string { return p.Candidate() + "/" + sha }

// Rollout is the rollout record: the plan (steps, bake, auto), who drives
// it and its events. Publisher-only, like history.
func (p Paths) Rollout() string { return p.Base() + "/rollout" }

// RolloutDriver is the parent of the ephemeral node of the process driving
// a rollout (--auto, --steps): while it exists the driver is alive.
func (p Paths) RolloutDriver() string { return p.Base() + "/rollout-driver" }

// RootOfKey is the root path a metadata key names (RootKey's inverse):
// "config%2Fweb" is /config/web. ok is false for a name RootKey cannot
// have made (a stray node under <meta>/roots).
func RootOfKey(key string) (root string, ok bool) {
	var b strings.Builder
	b.WriteByte('/')
	for i := 0; i < len(key); i++ {
		switch {
		case key[i] != '%':
			if key[i] == '/' {
				return "", false
			}
			b.WriteByte(key[i])
		case strings.HasPrefix(key[i:], "%2F"):
			b.WriteByte('/')
			i += 2
		case strings.HasPrefix(key[i:], "%25"):
			b.WriteByte('%')
			i += 2
		default:
			return "", false
		}
	}
	root = b.String()
	return root, ValidateRoot(root) == nil && RootKey(root) == key
}
