package publish

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/user"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/layout"
)

// Size limits. ZooKeeper refuses (by dropping the connection) any request
// larger than its jute.maxbuffer, 0xfffff bytes by default.
const (
	// ItemLimit is the largest item (and manifest) accepted: 1 MiB - 16 KiB,
	// leaving room for the path and the request framing.
	ItemLimit = 1<<20 - 16<<10
	// DefaultMultiBudget is the largest encoded Multi sent: 1 MiB - 64 KiB.
	// A set whose transaction would exceed it is published in marker mode.
	DefaultMultiBudget = 1<<20 - 64<<10
	// DefaultMaxSetSize bounds the total size of a set: 64 MiB.
	DefaultMaxSetSize = 64 << 20
	// defaultRetention is how many generations the history keeps.
	defaultRetention = 20
)

// Option configures a Publisher.
type Option func(*config)

type config struct {
	meta        string
	retention   int
	log         *slog.Logger
	name        string
	multiBudget int
	maxSet      int64
	acl         []zk.ACL
	readers     func(ctx context.Context, format int) ([]OldAgent, error)

	hooks testHooks // zero in production
}

func defaultConfig() config {
	return config{
		meta:        layout.DefaultMeta,
		retention:   defaultRetention,
		multiBudget: DefaultMultiBudget,
		maxSet:      DefaultMaxSetSize,
		acl:         zk.WorldACL(zk.PermAll),
	}
}

// WithReaders sets how the publisher learns which agents of the root
// cannot read a manifest format: before it writes a manifest of a format
// newer than manifest.FormatVersion (a set with item paths), it calls
// readers and refuses with an *OldAgentsError while any agent is
// returned, unless Request.AllowOldAgents. rollout.Readers builds it from
// a fleet.Fleet (publish does not read agent status itself); confpush
// always sets it. Without it a publisher cannot know who follows the root
// and writes any format: an agent too old to read it keeps its generation
// and reports the refusal.
func WithReaders(readers func(ctx context.Context, format int) ([]OldAgent, error)) Option {
	return func(c *config) { c.readers = readers }
}

// WithMeta sets the metadata path (history, blobs, liveness nodes).
// Default "/zkconf".
func WithMeta(path string) Option { return func(c *config) { c.meta = path } }

// WithRetention sets how many generations the history keeps (at least 1;
// the live generation is always kept). Default 20. Older generations are
// deleted in batches: the history may hold up to a quarter more before a
// publish deletes down to n (docs/design.md, "History and GC").
func WithRetention(n int) Option { return func(c *config) { c.retention = n } }

// WithLogger sets the logger. Item contents are never logged.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// WithPublisherName sets the name recorded in manifests and markers.
// Default user@host.
func WithPublisherName(s string) Option { return func(c *config) { c.name = s } }

// withMultiBudget sets the largest encoded Multi the publisher sends
// (default DefaultMultiBudget). Lowering it forces marker mode for smaller
// sets, which tests use; raising it above the default is refused, since a
// request over jute.maxbuffer makes the server drop the connection.
func withMultiBudget(bytes int) Option { return func(c *config) { c.multiBudget = bytes } }

// withMaxSetSize bounds the total size of a set. Default 64 MiB.
func withMaxSetSize(bytes int64) Option { return func(c *config) { c.maxSet = bytes } }

// WithACL sets the ACL of the nodes a publisher creates where the live
// tree gives none. A publisher copies the ACLs of the live tree (as
// `confpush init` set them, read again whenever their ACL version
// changes): items, the marker and the root get the root's ACL, history
// entries, blobs, liveness nodes and missing metadata parents the history
// parent's; acl is used only where those nodes do not exist yet (a tree
// without `confpush init`, such as an application's own root under its
// digest identity). Default zk.WorldACL(zk.PermAll).
func WithACL(acl []zk.ACL) Option { return func(c *config) { c.acl = acl } }

func (c *config) validate() error {
	if err := layout.ValidateRoot(c.meta); err != nil {
		return fmt.Errorf("meta path: %w", err)
	}
	if c.retention < 1 {
		return fmt.Errorf("retention %d: must keep at least 1 generation", c.retention)
	}
	if c.multiBudget < 4096 || c.multiBudget > DefaultMultiBudget {
		return fmt.Errorf("multi budget %d: must be between 4096 and %d bytes", c.multiBudget, DefaultMultiBudget)
	}
	if c.maxSet < 1 {
		return fmt.Errorf("max set size %d: must be positive", c.maxSet)
	}
	if len(c.acl) == 0 {
		return fmt.Errorf("empty ACL")
	}
	return nil
}

// defaultPublisherName is user@host, with fallbacks for containers without
// a passwd entry.
func defaultPublisherName() string {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if name == "" {
		name = "unknown"
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return name + "@" + host
}
