package publish

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/work"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/zkclient"
)

// Request is one publish.
type Request struct {
	// Items maps item names to content: the whole new set. The publish
	// hashes the items first and writes them later, without copying:
	// their bytes must not be modified until it returned (nor since a
	// Prefetch of the same set).
	Items map[string][]byte
	// Mode selects multi or marker mode; manifest.ModeAuto (the zero
	// value) decides by size.
	Mode manifest.Mode
	// ExpectGeneration, when not 0, makes the publish fail with a
	// ConflictError unless the live generation is exactly this.
	ExpectGeneration int64
	// Force publishes a new generation even when the content is identical
	// to the live one.
	Force bool
	// AllowEmpty allows publishing a set with no items.
	AllowEmpty bool
	// CreateRoot is for Edit only: it lets an edit of a root that was
	// never published start from an empty set. Without it such an edit
	// fails with ErrNotPublished and writes nothing: a root that is
	// missing because ZooKeeper was wiped (or because the root was
	// mistyped) would otherwise become a set of the edited items alone,
	// and every agent following it would render that set.
	CreateRoot bool
	// OverrideMarker takes over the marker of a live marker-mode publish
	// (whose remaining writes then fail, fenced by the marker version).
	OverrideMarker bool
	// DryRun reads and plans but writes nothing.
	DryRun bool
	// RollbackOf records, in the manifest, the generation whose content
	// this publish restores.
	RollbackOf int64
	// Fence, when set, is the path of a znode that must exist for the
	// publish to be applied (a leader's election node): every write that
	// changes the root or its items (the commit; in marker mode the marker,
	// each item write and the final commit) carries Check(Fence) in the
	// same transaction, so a publisher that lost the node (its session
	// expired) cannot commit even before it learns so. A missing fence
	// gives an error matching ErrFenced.
	Fence string
	// Message is the publisher's note on who and why, stored in the
	// manifest (manifest.Manifest.Message) and shown by history: at most
	// MaxMessageLen bytes of UTF-8 without control characters
	// (ValidateMessage). "" stores none.
	Message string
	// NoRemove refuses a publish whose set lacks items of the live
	// generation: it fails with a *RemovalError listing them (dry runs
	// too) and writes nothing. Without it the set replaces the live one
	// whole, which is what a rollback or a directory kept as the source
	// of truth wants.
	NoRemove bool
	// Canary, when set, publishes Items as the candidate generation of a
	// canary rollout exposed to the agents the selection selects; every
	// other agent stays on the live (stable) generation. See
	// docs/design.md, "Canary rollouts". The root must have been
	// published; the set is committed in one transaction.
	Canary *manifest.Selection
	// RolloutPlan is the driver's plan recorded with a canary (optional).
	RolloutPlan *RolloutPlan
	// Supersede lets a publish (plain, rollback, edit or a new canary)
	// replace a rollout in progress instead of failing with a
	// *RolloutInProgressError: a plain publish ends it, a canary replaces
	// its candidate.
	Supersede bool
	// Adopt lets the first generation of a root be published over nodes
	// another tool wrote (a key tree confd reads: confpush import): a
	// root with children, or data that is not a manifest, but no zkconf
	// manifest. The nodes at the set's paths must already hold the set's
	// content (the set was read from them; anything else fails with a
	// ConflictError, nothing written), so the commit writes the root's
	// data (the manifest, replacing whatever it held) and the history,
	// no item. Every other node under the root is left as it is,
	// unmanaged (docs/design.md, "Adopting a key tree"). Refused on a
	// root that has a manifest; without children it changes nothing.
	Adopt bool
	// AllowOldAgents publishes a set whose manifest needs a newer format
	// (manifest.FormatTree: item paths with '/') than expected agents of
	// the root report reading. Without it such a publish (dry runs too)
	// fails with an *OldAgentsError naming them and writes nothing; with
	// it those agents keep their generation and report the refusal
	// (manifest.ErrFutureFormat). A set of flat names never reads the
	// fleet.
	AllowOldAgents bool

	// Set by Promote and Abort: the rollout the publish ends.
	rolloutID          string
	promoteOf, abortOf int64
}

// Result describes a publish.
type Result struct {
	// Generation is the new generation (for Unchanged, the live one; for
	// DryRun, the one a real publish would create).
	Generation int64
	// Zxid is the zxid of the commit, the root's Mzxid right after it: the
	// generation's fencing token. 0 for DryRun.
	Zxid int64
	// PublishID is this publish attempt's id ("" for DryRun/Unchanged).
	PublishID string
	// Mode is manifest.ModeMulti or manifest.ModeMarker (what was, or
	// would be, used).
	Mode manifest.Mode
	// Unchanged is true when the content equals the live generation and
	// nothing was written.
	Unchanged bool
	// DryRun is true when nothing was written because the request said so.
	DryRun bool
	// Added, Changed and Removed list item names relative to the live
	// generation.
	Added, Changed, Removed []string
	// Manifest is the new (or, for Unchanged, the live) manifest.
	Manifest *manifest.Manifest
	// Recovered is true when the commit's connection was lost and its
	// outcome was established by reading afterwards.
	Recovered bool
	// CommitAttempts counts the commit requests sent (more than 1 only
	// when a commit was lost with the connection and, having been found
	// not applied, was sent again under the same compare-and-swap).
	CommitAttempts int
	// TookOver, when not empty, says which marker this publish took over
	// (an abandoned one: its publisher is gone, or its data was not written
	// by confpush; or a live one, with OverrideMarker) and why. A dry run
	// says which it would take over.
	TookOver string
	// Repaired lists live items whose content did not match the live
	// manifest (changed outside confpush) and that this publish rewrote.
	Repaired []string
	// Strays lists the nodes zkconf did not write (created behind its
	// back) found under directories of the tree that the new set no
	// longer has: those directories were left in place, with them
	// (docs/design.md, "Config trees"). A dry run lists what it would
	// leave.
	Strays []string
}

// Publisher publishes config sets to one root. It is safe for concurrent
// use; concurrent publishes (from this or other processes) are ordered by
// the root's compare-and-swap, the losers getting ErrConflict.
type Publisher struct {
	cl    *zkclient.Client
	paths layout.Paths
	cfg   config
	log   *slog.Logger
	// name is the publisher's name (WithName, else user@host).
	name func() string

	metaReady atomic.Bool // the liveness nodes' parent exists
	// noMultiRead: the server refused a multiRead (ZooKeeper older than
	// 3.6, which then closes the connection): read items one Get each.
	noMultiRead atomic.Bool

	mu         sync.Mutex
	cacheRoot  int64 // root Czxid the cache belongs to
	historyMan map[int64]*manifest.Manifest
	acls       *inherited // the last ACLs read, reused while their versions hold
	prefetched *stepTwo   // reads Prefetch sent, for the next publish
}

// New returns a Publisher for root on cl: a Client from zkclient.Dial, or
// an application's own connection and its session tracker wrapped by
// zkclient.Fixed. The Publisher takes the connection from cl for every
// request and never closes it.
func New(cl *zkclient.Client, root string, opts ...Option) (*Publisher, error) {
	if cl == nil || cl.Conn() == nil {
		return nil, errors.New("publish: nil ZooKeeper client")
	}
	if err := layout.ValidateRoot(root); err != nil {
		return nil, fmt.Errorf("publish: %w", err)
	}
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("publish: %w", err)
	}
	if within(root, cfg.meta) || within(cfg.meta, root) {
		return nil, fmt.Errorf("publish: root %s and meta %s must not contain one another", root, cfg.meta)
	}
	name := func() string { return cfg.name }
	if cfg.name == "" {
		// The user's lookup (the passwd database, the host name) takes a
		// millisecond or more: it runs while the first requests are in
		// flight, and the first use of the name waits for it.
		c := make(chan string, 1)
		go func() { c <- defaultPublisherName() }()
		name = sync.OnceValue(func() string { return <-c })
	}
	log := cfg.log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Publisher{
		cl:         cl,
		paths:      layout.New(root, cfg.meta),
		cfg:        cfg,
		name:       name,
		log:        log.With("root", root),
		historyMan: map[int64]*manifest.Manifest{},
	}, nil
}

// within reports whether p is a or below it.
func within(p, a string) bool { return p == a || strings.HasPrefix(p, a+"/") }

// conn is the client's current connection. It is taken for every request,
// so that a replacement (zkclient.Client) is followed; the replacement
// counts as a session expiry (expiredSince).
func (p *Publisher) conn() *zk.Conn { return p.cl.Conn() }

// sess is the connection's session tracker (nil when the application
// wrapped its connection without one: expiry is then detected from errors
// and session ids only).
func (p *Publisher) sess() *zkclient.Session { return p.cl.Session() }

// Root returns the config root.
func (p *Publisher) Root() string { return p.paths.Root }

// Current returns the live manifest and the root's stat. It returns
// ErrNotPublished when the root does not exist or holds no manifest.
func (p *Publisher) Current(ctx context.Context) (*manifest.Manifest, *zk.Stat, error) {
	data, st, err := p.get(ctx, p.paths.Root)
	if err != nil {
		return nil, nil, err
	}
	if st == nil {
		return nil, nil, fmt.Errorf("%s: %w", p.paths.Root, ErrNotPublished)
	}
	m, err := manifest.Decode(data)
	if errors.Is(err, manifest.ErrEmpty) {
		return nil, st, fmt.Errorf("%s: %w", p.paths.Root, ErrNotPublished)
	}
	if err != nil {
		return nil, st, fmt.Errorf("root %s: %w", p.paths.Root, err)
	}
	return m, st, nil
}

// Read returns a generation's manifest and items. Generation 0 means the
// live one, read from the root with manifest verification: the items read
// must all match the manifest's hashes, else the read is retried (a
// publish landed in between); if it stays torn while a marker exists (a
// marker-mode publish is in progress, or died), the live generation's
// content is read from the history and blob store instead, verified the
// same way. Without a marker, an item that keeps not matching the same
// manifest was changed outside confpush: Read fails with an
// *manifest.ItemMismatchError naming it rather than answer from stored copies. Other
// generations are read from the history and blob store, and fail with
// ErrGenerationNotFound when retention removed them.
func (p *Publisher) Read(ctx context.Context, generation int64) (*manifest.Manifest, map[string][]byte, error) {
	if generation < 0 {
		return nil, nil, fmt.Errorf("generation %d: must be positive (or 0 for the live one)", generation)
	}
	if generation > 0 {
		return p.readPast(ctx, generation)
	}
	lastID, same := "", 0 // torn reads in a row under the same manifest
	for attempt := 0; ; attempt++ {
		m, _, err := p.Current(ctx)
		if err != nil {
			return nil, nil, err
		}
		items, torn, err := p.readItems(ctx, m)
		if err != nil {
			return nil, nil, err
		}
		if torn == "" {
			return m, items, nil
		}
		if m.PublishID == lastID {
			same++
		} else {
			lastID, same = m.PublishID, 0
		}
		p.log.Debug("live read torn; retrying", "generation", m.Generation, "item", torn, "attempt", attempt)
		if attempt >= 2 {
			ms, err := p.exists(ctx, p.paths.Marker())
			if err != nil {
				return nil, nil, err
			}
			if ms != nil {
				hm, hitems, herr := p.readPast(ctx, m.Generation)
				if herr == nil && hm.PublishID == m.PublishID {
					return hm, hitems, nil
				}
			} else if same >= 2 {
				return nil, nil, fmt.Errorf("%w: it was changed outside confpush (or a publish is in progress); publishing the set again repairs it",
					&manifest.ItemMismatchError{Root: p.paths.Root, Item: torn, Generation: m.Generation})
			}
		}
		if err := readRetry().Sleep(ctx, attempt+1); err != nil {
			return nil, nil, fmt.Errorf("live %w (item %q of generation %d): %v", manifest.ErrTorn, torn, m.Generation, err)
		}
	}
}

// readItems reads m's items from the root. torn names an item that is
// missing or does not match m ("" when all match).
func (p *Publisher) readItems(ctx context.Context, m *manifest.Manifest) (map[string][]byte, string, error) {
	names := m.Names()
	data := make([][]byte, len(names))
	found := make([]bool, len(names))
	err := work.Parallel(ctx, len(names), 8, func(ctx context.Context, i int) error {
		d, st, err := p.get(ctx, p.paths.Item(names[i]))
		if err != nil {
			return err
		}
		data[i], found[i] = d, st != nil
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	items := make(map[string][]byte, len(names))
	for i, n := range names {
		if !found[i] || !m.Matches(n, data[i]) {
			return nil, n, nil
		}
		items[n] = data[i]
	}
	return items, "", nil
}

// readPast reads generation g from the history and the blob store. A
// content with no blob is read from the live items when the live
// generation has it (the history invariant: every content a retained
// generation references is a blob, or live, or both; the blobs of a
// publish's new contents are stored after its acknowledgement, or by the
// next publish that overwrites them).
func (p *Publisher) readPast(ctx context.Context, g int64) (*manifest.Manifest, map[string][]byte, error) {
	m, err := p.historyManifest(ctx, g)
	if err != nil {
		return nil, nil, err
	}
	names := m.Names()
	data := make([][]byte, len(names))
	live := &liveIndex{p: p}
	err = work.Parallel(ctx, len(names), 8, func(ctx context.Context, i int) error {
		it := m.Items[names[i]]
		d, st, err := p.get(ctx, p.paths.Blob(it.SHA256))
		if err != nil {
			return err
		}
		if st == nil {
			// Not stored: live content? A live item that no longer holds it
			// was overwritten after its content was stored, so look for the
			// blob once more.
			ld, ok, lerr := live.content(ctx, it.SHA256)
			if lerr != nil {
				return lerr
			}
			if ok {
				d, st = ld, &zk.Stat{}
			} else if d, st, err = p.get(ctx, p.paths.Blob(it.SHA256)); err != nil {
				return err
			}
		}
		if st == nil {
			return fmt.Errorf("generation %d: content of item %q is no longer stored (removed by retention): %w", g, names[i], ErrGenerationNotFound)
		}
		if !m.Matches(names[i], d) {
			return fmt.Errorf("generation %d: stored content of item %q does not match its manifest (blob %s corrupt)", g, names[i], it.SHA256)
		}
		data[i] = d
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	items := make(map[string][]byte, len(names))
	for i, n := range names {
		items[n] = data[i]
	}
	return m, items, nil
}

// liveIndex finds contents among the live items, reading the live
// manifest once, on first use.
type liveIndex struct {
	p     *Publisher
	mu    sync.Mutex
	read  bool
	names map[string][]string // sha256 → live item names
}

// content returns a live item holding content sha, verified.
func (l *liveIndex) content(ctx context.Context, sha string) ([]byte, bool, error) {
	l.mu.Lock()
	if !l.read {
		m, _, err := l.p.Current(ctx)
		switch {
		case errors.Is(err, ErrNotPublished):
		case err != nil:
			l.mu.Unlock()
			return nil, false, err
		}
		l.names, l.read = namesByHash(m), true
	}
	names := l.names[sha]
	l.mu.Unlock()
	return l.p.liveContent(ctx, names, sha)
}

// historyManifest reads generation g's manifest from the history. History
// entries are immutable, so they are cached (per root incarnation).
func (p *Publisher) historyManifest(ctx context.Context, g int64) (*manifest.Manifest, error) {
	p.mu.Lock()
	m := p.historyMan[g]
	p.mu.Unlock()
	if m != nil {
		return m, nil
	}
	data, st, err := p.get(ctx, p.paths.HistoryNode(g))
	if err != nil {
		return nil, err
	}
	if st == nil {
		return nil, fmt.Errorf("generation %d of %s: %w", g, p.paths.Root, ErrGenerationNotFound)
	}
	m, err = manifest.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("history entry %s: %w", p.paths.HistoryNode(g), err)
	}
	if m.Generation != g {
		return nil, fmt.Errorf("history entry %s holds generation %d", p.paths.HistoryNode(g), m.Generation)
	}
	p.mu.Lock()
	p.historyMan[g] = m
	p.mu.Unlock()
	return m, nil
}

// resetCacheFor drops cached history manifests when the root was deleted
// and created again (a new Czxid), since generations could then repeat.
func (p *Publisher) resetCacheFor(rootCzxid int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cacheRoot != rootCzxid {
		p.cacheRoot = rootCzxid
		clear(p.historyMan)
	}
}

// trimCache keeps only the given generations in the cache.
func (p *Publisher) trimCache(keep []int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for g := range p.historyMan {
		if !slices.Contains(keep, g) {
			delete(p.historyMan, g)
		}
	}
}

// History returns the manifests of every retained generation, newest
// first. Entries removed by a concurrent GC while reading are skipped.
func (p *Publisher) History(ctx context.Context) ([]*manifest.Manifest, error) {
	gens, _, err := p.historyGens(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*manifest.Manifest, 0, len(gens))
	for _, g := range slices.Backward(gens) {
		m, err := p.historyManifest(ctx, g)
		if errors.Is(err, ErrGenerationNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// historyGens lists the generations in the history, ascending.
func (p *Publisher) historyGens(ctx context.Context) ([]int64, bool, error) {
	gens, st, err := p.historyList(ctx)
	return gens, st != nil, err
}

// historyList is historyGens with the history parent's stat (nil: it does
// not exist).
func (p *Publisher) historyList(ctx context.Context) ([]int64, *zk.Stat, error) {
	names, st, err := p.childrenStat(ctx, p.paths.History())
	if err != nil {
		return nil, nil, err
	}
	return parseHistory(names), st, nil
}

// parseHistory returns the generations the history parent's children
// names (ascending); names that are not history entries are left out.
func parseHistory(names []string) []int64 {
	gens := make([]int64, 0, len(names))
	for _, n := range names {
		if g, ok := layout.ParseHistoryName(n); ok {
			gens = append(gens, g)
		}
	}
	slices.Sort(gens)
	return gens
}

// Rollback publishes generation to's content as a new generation (with
// RollbackOf = to): generations only go up. opts supplies the other
// request fields (ExpectGeneration, Force, DryRun, Mode, OverrideMarker);
// its Items and RollbackOf are ignored. Rolling back to content identical
// to the live one is Unchanged unless opts.Force.
func (p *Publisher) Rollback(ctx context.Context, to int64, opts Request) (*Result, error) {
	if to < 1 {
		return nil, &InputError{Err: fmt.Errorf("rollback target generation %d: must be positive", to)}
	}
	_, items, err := p.readPast(ctx, to)
	if err != nil {
		return nil, fmt.Errorf("rollback to generation %d: %w", to, err)
	}
	req := opts
	req.Items = items
	req.RollbackOf = to
	req.AllowEmpty = true // the generation was published, empty or not
	if req.Message == "" {
		req.Message = fmt.Sprintf("rollback to generation %d", to)
	}
	res, err := p.Publish(ctx, req)
	if err != nil {
		return res, fmt.Errorf("rollback to generation %d: %w", to, err)
	}
	return res, nil
}
