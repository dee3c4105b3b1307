package chaos

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/layout"
)

// Violation is one broken property.
type Violation struct {
	// Property: P1-torn, P2-backwards, P3-partial, P4-publish,
	// P5-convergence, P6-rejected-content, recovery, agent-exit,
	// config-reload, reload-retry, forged-status, incarnation,
	// P7-rollout-refusal, P8-selection, hostile-agent; for the two
	// roots (roots_check.go) R1-torn, R2-backwards, R3-lost, R4-cut,
	// R5-common-publish.
	Property string
	Agent    int // -1 when not one agent's
	At       time.Time
	Msg      string
	Context  []string // the history around At
}

func (v Violation) who() string {
	if v.Agent < 0 {
		return "-"
	}
	return fmt.Sprintf("agent-%d", v.Agent)
}

// histEntry is one generation as ZooKeeper's history records it, decoded
// by the checker itself.
type histEntry struct {
	Gen         int64 // as the manifest says: restarts in every incarnation
	Format      int   // 1, or 2 for a set with any '/' in a path
	Inc         int   // the run's count of ensemble wipes before it (see gkey)
	IncID       string
	PublishID   string
	Mode        string
	RollbackOf  int64
	PublishedAt time.Time
	Items       map[string]sig
	Czxid       int64
	// Rollouts: a candidate generation (the data of history g-C names
	// its selection), the candidate a promote or abort ended, and, for
	// the live root only, the canary it announces.
	Candidate          bool
	PromoteOf, AbortOf int64
	Canary             *wireCanary
}

// wireCanary is the root's canary field as the checker reads it.
type wireCanary struct {
	Generation int64   `json:"generation"`
	Selector   string  `json:"selector"`
	Percent    float64 `json:"percent"`
	RolloutID  string  `json:"rollout_id"`
}

// wireManifest is the manifest JSON (docs/design.md), decoded without the
// manifest package.
type wireManifest struct {
	Format      int       `json:"format"`
	Generation  int64     `json:"generation"`
	PublishID   string    `json:"publish_id"`
	PublishedAt time.Time `json:"published_at"`
	Mode        string    `json:"mode"`
	RollbackOf  int64     `json:"rollback_of"`
	// Incarnation identifies the tree's incarnation (a new one after the
	// ensemble lost its data and the root was created again); see
	// incarnationOf.
	Incarnation string          `json:"incarnation"`
	Candidate   json.RawMessage `json:"candidate"`
	PromoteOf   int64           `json:"promote_of"`
	AbortOf     int64           `json:"abort_of"`
	Canary      *wireCanary     `json:"canary"`
	Items       map[string]struct {
		SHA256 string `json:"sha256"`
		Size   int64  `json:"size"`
	} `json:"items"`
}

func decodeEntry(data []byte) (*histEntry, error) {
	var m wireManifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	if (m.Format != 1 && m.Format != 2) || m.Generation < 1 || m.PublishID == "" {
		return nil, fmt.Errorf("not a manifest (format %d, generation %d, publish id %q)", m.Format, m.Generation, m.PublishID)
	}
	e := &histEntry{Gen: m.Generation, Format: m.Format, PublishID: m.PublishID, Mode: m.Mode, RollbackOf: m.RollbackOf,
		PublishedAt: m.PublishedAt, IncID: m.Incarnation, Items: map[string]sig{},
		Candidate: len(m.Candidate) > 0 && string(m.Candidate) != "null", PromoteOf: m.PromoteOf, AbortOf: m.AbortOf, Canary: m.Canary}
	for n, it := range m.Items {
		e.Items[n] = sig{SHA: it.SHA256, Size: it.Size}
	}
	return e, nil
}

// zkView is what ZooKeeper holds at the end of the run.
type zkView struct {
	history     map[int64]*histEntry
	live        *histEntry
	liveItems   map[string]sig // the root's children, read and hashed
	marker      bool
	blobs       map[string]bool
	historyRead int
	inc         int // the run's incarnation count when it was read
}

// readZK reads the history, the live root and the blob list directly.
func readZK(conn *zk.Conn, root, meta string) (*zkView, error) {
	paths := layout.New(root, meta)
	v := &zkView{history: map[int64]*histEntry{}, liveItems: map[string]sig{}, blobs: map[string]bool{}}
	names, _, err := conn.Children(paths.History())
	if err != nil {
		return nil, fmt.Errorf("list history: %w", err)
	}
	for _, n := range names {
		g, ok := layout.ParseHistoryName(n)
		if !ok {
			return nil, fmt.Errorf("history has a foreign entry %q", n)
		}
		data, st, err := conn.Get(paths.HistoryNode(g))
		if err != nil {
			return nil, fmt.Errorf("read history entry %d: %w", g, err)
		}
		e, err := decodeEntry(data)
		if err != nil {
			return nil, fmt.Errorf("history entry %d: %w", g, err)
		}
		if e.Gen != g {
			return nil, fmt.Errorf("history entry g-%d holds generation %d", g, e.Gen)
		}
		e.Czxid = st.Czxid
		v.history[g] = e
		v.historyRead++
	}
	data, _, err := conn.Get(root)
	if err != nil {
		return nil, fmt.Errorf("read root: %w", err)
	}
	if v.live, err = decodeEntry(data); err != nil {
		return nil, fmt.Errorf("root manifest: %w", err)
	}
	if err := v.walkLive(conn, root, ""); err != nil {
		return nil, err
	}
	blobs, _, err := conn.Children(paths.Blobs())
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, fmt.Errorf("list blobs: %w", err)
	}
	for _, b := range blobs {
		v.blobs[b] = true
	}
	return v, nil
}

// walkLive reads the live tree below root/dir into liveItems: a node with
// children is a directory (its path, empty data expected), a node without
// is an item (its path and content). A directory with data is recorded as
// the item "dir/", and an empty directory left behind as an empty item,
// so that either shows as a difference from the manifest. The marker is
// the top level's "invalid" only.
func (v *zkView) walkLive(conn *zk.Conn, root, dir string) error {
	node := root
	if dir != "" {
		node = root + "/" + dir
	}
	kids, _, err := conn.Children(node)
	if err != nil {
		return fmt.Errorf("list %s: %w", node, err)
	}
	for _, k := range kids {
		p := k
		if dir != "" {
			p = dir + "/" + k
		} else if k == "invalid" {
			v.marker = true
			continue
		}
		b, st, err := conn.Get(root + "/" + p)
		if err != nil {
			return fmt.Errorf("read item %s: %w", p, err)
		}
		if st.NumChildren == 0 {
			v.liveItems[p] = sigOf(b)
			continue
		}
		if len(b) > 0 {
			v.liveItems[p+"/"] = sigOf(b)
		}
		if err := v.walkLive(conn, root, p); err != nil {
			return err
		}
	}
	return nil
}

// formatFor is the manifest format a set needs: 2 when any path has a
// '/', else 1 (docs/design.md, "Config trees").
func formatFor[V any](items map[string]V) int {
	for n := range items {
		if strings.Contains(n, "/") {
			return 2
		}
	}
	return 1
}

// digest is a canonical digest of an item set.
func digest(items map[string]sig) string {
	h := sha256.New()
	for _, n := range slices.Sorted(maps.Keys(items)) {
		fmt.Fprintf(h, "%q %s %d\n", n, items[n].SHA, items[n].Size)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func obsSigs(items map[string]itemObs) map[string]sig {
	out := make(map[string]sig, len(items))
	for n, it := range items {
		out[n] = sig{SHA: it.SHA, Size: it.Size}
	}
	return out
}

// gkey is the checker's key for generation gen of the run's incarnation
// inc (0 before any ensemble wipe, 1 after the first, ...). Generation
// numbers restart with every incarnation; keys order generations across
// incarnations the only way an agent may move: old incarnation to new.
func gkey(inc int, gen int64) int64 { return int64(inc)<<40 | gen }

// splitKey is gkey's inverse.
func splitKey(k int64) (inc int, gen int64) { return int(k >> 40), k & (1<<40 - 1) }

// genName names a key for messages: "17", or "3 of incarnation 1".
func genName(k int64) string {
	inc, g := splitKey(k)
	if inc == 0 {
		return fmt.Sprint(g)
	}
	return fmt.Sprintf("%d of incarnation %d", g, inc)
}

func genNames(ks []int64) string {
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = genName(k)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// checker verifies everything recorded against the history. hist is keyed
// by gkey: the history of every incarnation the run went through (the
// ones before an ensemble wipe as read just before it).
type checker struct {
	hist      map[int64]*histEntry
	byDigest  map[string][]int64
	known     map[string]map[sig]bool
	poisonGen map[int64]bool
	nonceOf   map[string]string // app.json sha -> request nonce

	maxInc int // the highest incarnation in hist

	violations []Violation
	states     int
	treeStates int // dir target states holding a sub-directory
	// treeLinkPaths: distinct paths below a top-level directory read
	// through its link.
	treeLinkPaths int
	linkPairs     int
}

func newChecker(hist map[int64]*histEntry, records []*pubRecord, poison map[sig]bool) *checker {
	c := &checker{hist: hist, byDigest: map[string][]int64{}, known: map[string]map[sig]bool{},
		poisonGen: map[int64]bool{}, nonceOf: map[string]string{}}
	for g, e := range hist {
		c.maxInc = max(c.maxInc, e.Inc)
		d := digest(e.Items)
		c.byDigest[d] = append(c.byDigest[d], g)
		for n, s := range e.Items {
			if c.known[n] == nil {
				c.known[n] = map[sig]bool{}
			}
			c.known[n][s] = true
			if poison[s] {
				c.poisonGen[g] = true
			}
		}
	}
	for _, gs := range c.byDigest {
		slices.Sort(gs)
	}
	for _, r := range records {
		if s, ok := r.Items["app.json"]; ok && r.Kind != kindRollback && r.EndOf == 0 {
			c.nonceOf[s.SHA] = r.Nonce
		}
	}
	return c
}

func (c *checker) violate(prop string, agent int, at time.Time, format string, args ...any) {
	c.violations = append(c.violations, Violation{Property: prop, Agent: agent, At: at, Msg: fmt.Sprintf(format, args...)})
}

// checkAgent verifies properties 1, 2, 3 and 6 over one agent's states,
// and returns, per target, the generation each state was assigned.
func (c *checker) checkAgent(o *agentObs, picky bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	c.violations = append(c.violations, o.anomalies...)
	id := o.idx

	// dir target: each state must be exactly one generation's set; the
	// generations assigned must not decrease. A set can match several
	// generations (a rollback republishes old content): the earliest one
	// not below the previous state's is taken, which finds a
	// non-decreasing assignment whenever one exists.
	var floor int64
	for _, s := range o.states[tDir] {
		c.states++
		if s.Absent {
			continue
		}
		if s.Bad != "" {
			c.violate("P3-partial", id, s.First, "dir target could not be read as a whole set: %s", s.Bad)
			continue
		}
		c.checkFiles(id, s.First, "dir target", s.Items)
		cands := c.byDigest[digest(obsSigs(s.Items))]
		if len(cands) == 0 {
			c.violate("P1-torn", id, s.First, "dir target holds a set that is no published generation: %s", c.closest(obsSigs(s.Items), false))
			continue
		}
		if picky {
			clean := slices.DeleteFunc(slices.Clone(cands), func(g int64) bool { return c.poisonGen[g] })
			if len(clean) == 0 {
				c.violate("P6-rejected-content", id, s.First, "dir target rendered generation(s) %s, whose content this agent's check rejects", genNames(cands))
				continue
			}
			cands = clean
		}
		i := sort.Search(len(cands), func(i int) bool { return cands[i] >= floor })
		if i == len(cands) {
			c.violate("P2-backwards", id, s.First, "dir target went back: after generation %s it shows a set that only generation(s) %s had", genName(floor), genNames(cands))
			continue
		}
		floor = cands[i]
		s.Assigned = floor
		if formatFor(s.Items) == 2 {
			c.treeStates++
		}
	}

	// template target: the output names its generation; it must be
	// exactly that generation's items, and generations must not decrease.
	var last int64
	for _, s := range o.states[tTmpl] {
		c.states++
		if s.Absent {
			continue
		}
		if s.Bad != "" {
			c.violate("P3-partial", id, s.First, "template output is partial or garbled: %s", s.Bad)
			continue
		}
		k := c.templateKey(s.Gen, s.Nonce, last)
		e := c.hist[k]
		if e == nil {
			c.violate("P1-torn", id, s.First, "template output names generation %d, which is not in the history", s.Gen)
			continue
		}
		if diff := compareTemplate(e.Items, s.Items); diff != "" {
			c.violate("P1-torn", id, s.First, "template output of generation %d does not match that generation: %s", s.Gen, diff)
			continue
		}
		if want := c.nonceOf[e.Items["app.json"].SHA]; want != s.Nonce {
			c.violate("P1-torn", id, s.First, "template output of generation %d shows request %q through the json helper, the generation has %q", s.Gen, s.Nonce, want)
		}
		if picky && c.poisonGen[k] {
			c.violate("P6-rejected-content", id, s.First, "template output shows generation %s, whose content this agent's check rejects", genName(k))
		}
		if k < last {
			c.violate("P2-backwards", id, s.First, "template output went back from generation %s to %s", genName(last), genName(k))
		}
		s.Assigned = k
		last = max(last, k)
	}

	// top-level links, read one by one: each a whole item.
	for name, m := range o.links {
		if strings.Contains(name, "/") {
			c.treeLinkPaths++
		}
		for it, at := range m {
			c.linkPairs++
			if !c.known[name][sig{SHA: it.SHA, Size: it.Size}] {
				c.violate("P3-partial", id, at, "dir target link %q shows content (%d bytes, sha256 %.12s) that no generation ever had under that name%s",
					name, it.Size, it.SHA, c.sizeHint(name, it.Size))
			}
		}
	}
}

// templateKey finds the history entry a template output names: the
// output shows the generation number, which every incarnation reuses, and
// the request nonce, which is the publish attempt's own. The entry whose
// nonce matches wins; without one (a torn output, reported by the caller),
// the newest incarnation not above the previous output's, so that the
// mismatch is not also reported as a step back.
func (c *checker) templateKey(gen int64, nonce string, last int64) int64 {
	var fallback int64
	lastInc, _ := splitKey(last)
	for inc := 0; inc <= c.maxInc; inc++ {
		k := gkey(inc, gen)
		e := c.hist[k]
		if e == nil {
			continue
		}
		if c.nonceOf[e.Items["app.json"].SHA] == nonce {
			return k
		}
		if fallback == 0 || inc <= lastInc {
			fallback = k
		}
	}
	if fallback == 0 {
		return gen
	}
	return fallback
}

// checkFiles checks that every file is a whole item (property 3).
func (c *checker) checkFiles(agent int, at time.Time, what string, items map[string]itemObs) {
	for name, it := range items {
		if !c.known[name][sig{SHA: it.SHA, Size: it.Size}] {
			c.violate("P3-partial", agent, at, "%s file %q (%d bytes, sha256 %.12s) is no whole item ever published under that name%s",
				what, name, it.Size, it.SHA, c.sizeHint(name, it.Size))
		}
	}
}

func (c *checker) sizeHint(name string, size int64) string {
	var sizes []int64
	for s := range c.known[name] {
		sizes = append(sizes, s.Size)
	}
	slices.Sort(sizes)
	if len(sizes) == 0 {
		return " (no generation has that item)"
	}
	if size == 0 {
		return fmt.Sprintf(" (EMPTY; published sizes %v)", head(sizes, 8))
	}
	return fmt.Sprintf(" (published sizes %v)", head(sizes, 8))
}

func head[T any](s []T, n int) []T {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// closest describes how a set differs from the generation it is closest to.
func (c *checker) closest(items map[string]sig, _ bool) string {
	var best int64
	bestScore := -1
	for g, e := range c.hist {
		score := 0
		for n, s := range items {
			if e.Items[n] == s {
				score++
			}
		}
		if score > bestScore || (score == bestScore && g > best) {
			best, bestScore = g, score
		}
	}
	if best == 0 {
		return "no history"
	}
	return fmt.Sprintf("closest is generation %s: %s", genName(best), diffSets(c.hist[best].Items, items, c))
}

// diffSets describes want vs got, naming for each differing item the
// generations that had the observed content.
func diffSets(want, got map[string]sig, c *checker) string {
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(want)) {
		g, ok := got[n]
		switch {
		case !ok:
			parts = append(parts, fmt.Sprintf("%q missing", n))
		case g != want[n]:
			parts = append(parts, fmt.Sprintf("%q differs (seen in generations %s)", n, genNames(head(c.gensWith(n, g), 6))))
		}
	}
	for _, n := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[n]; !ok {
			parts = append(parts, fmt.Sprintf("%q extra (seen in generations %s)", n, genNames(head(c.gensWith(n, got[n]), 6))))
		}
	}
	if len(parts) > 12 {
		parts = append(parts[:12], fmt.Sprintf("... %d more", len(parts)-12))
	}
	return strings.Join(parts, "; ")
}

func (c *checker) gensWith(name string, s sig) []int64 {
	var out []int64
	for g, e := range c.hist {
		if e.Items[name] == s {
			out = append(out, g)
		}
	}
	slices.Sort(out)
	return out
}

// compareTemplate compares a template output's items with a generation's.
func compareTemplate(want map[string]sig, got map[string]itemObs) string {
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(want)) {
		g, ok := got[n]
		w := want[n]
		switch {
		case !ok:
			parts = append(parts, fmt.Sprintf("%q missing", n))
		case g.SizeOnly && g.Size != w.Size:
			parts = append(parts, fmt.Sprintf("%q is %d bytes, want %d", n, g.Size, w.Size))
		case !g.SizeOnly && (g.SHA != w.SHA || g.Size != w.Size):
			parts = append(parts, fmt.Sprintf("%q differs (%d bytes, want %d)", n, g.Size, w.Size))
		}
	}
	for _, n := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[n]; !ok {
			parts = append(parts, fmt.Sprintf("%q extra", n))
		}
	}
	return strings.Join(parts, "; ")
}

// publishStats are property 4's figures.
type publishStats struct {
	Attempted, Acked, Failed, Unknown        int
	UnknownLanded, UnknownNotLanded          int
	Marker, Big, Poison, Rollback, Recovered int
	Generations                              int
	ByKind                                   map[string]int
}

// checkHistory verifies property 4: every acknowledged publish is in
// ZooKeeper and in the history, item for item, at the generation it was
// acknowledged with; no publish landed twice; no publish reported as
// failed landed; every generation was published by someone who asked;
// unknown outcomes are resolved.
func (c *checker) checkHistory(v *zkView, records []*pubRecord, final *pubRecord, now time.Time) publishStats {
	st := publishStats{ByKind: map[string]int{}}
	gens := slices.Sorted(maps.Keys(v.history))
	st.Generations = len(gens)
	for i, g := range gens {
		if g != int64(i+1) {
			c.violate("P4-publish", -1, now, "history is not contiguous: generation %d follows %d", g, gens[max(0, i-1)])
			break
		}
	}
	for _, g := range gens {
		if e := v.history[g]; e.Format != formatFor(e.Items) {
			c.violate("P4-publish", -1, now, "generation %d has manifest format %d, its paths need format %d", g, e.Format, formatFor(e.Items))
		}
	}
	// The live root is the newest generation, its items as its manifest says.
	if len(gens) > 0 {
		newest := v.history[gens[len(gens)-1]]
		if v.live.Canary != nil {
			// During a rollout the root holds the stable generation and
			// the newest entry is the candidate it announces.
			c.checkLiveCanary(v, newest, now)
		} else if v.live.Gen != newest.Gen || v.live.PublishID != newest.PublishID {
			c.violate("P4-publish", -1, now, "live root holds generation %d (%s), the newest history entry is %d (%s)",
				v.live.Gen, v.live.PublishID, newest.Gen, newest.PublishID)
		}
		if final != nil && final.Outcome == outAcked && v.live.Gen != final.Gen {
			c.violate("P4-publish", -1, now, "live root holds generation %d, the final publish was acknowledged as %d", v.live.Gen, final.Gen)
		}
	}
	// A view read just before an ensemble wipe (final == nil) may catch a
	// marker-mode publish that failed half way: its marker and items are
	// left for the next publish to take over, which the wipe prevents.
	if v.marker && final != nil {
		c.violate("P4-publish", -1, now, "a marker (invalid) is left on the root after the final publish")
	}
	if !maps.Equal(v.live.Items, v.liveItems) && !(v.marker && final == nil) {
		c.violate("P4-publish", -1, now, "live root's items do not match its manifest: %s", diffSets(v.live.Items, v.liveItems, c))
	}
	// The history invariant: every content a retained generation
	// references is stored as a blob, or is the content of a live item of
	// the current generation (the blobs of new contents are stored after
	// the commit, or by the next publish that overwrites them).
	liveContent := map[string]bool{}
	for n, s := range v.liveItems {
		if ls, ok := v.live.Items[n]; ok && ls == s {
			liveContent[s.SHA] = true
		}
	}
	missing := 0
	for _, g := range gens {
		for n, s := range v.history[g].Items {
			if !v.blobs[s.SHA] && !liveContent[s.SHA] {
				if missing < 10 {
					c.violate("P4-publish", -1, now, "generation %d item %q references content %.12s, which is neither stored as a blob nor live", g, n, s.SHA)
				}
				missing++
			}
		}
	}

	// Attempts by content nonce; rollbacks by target.
	byNonce := map[string]*pubRecord{}
	rollbacksTo := map[int64][]*pubRecord{}
	for _, r := range records {
		st.Attempted++
		st.ByKind[r.Kind]++
		switch r.Outcome {
		case outAcked:
			st.Acked++
		case outFailed:
			st.Failed++
		case outUnknown:
			st.Unknown++
		}
		if r.Recovered {
			st.Recovered++
		}
		if r.Outcome == outAcked {
			switch r.Kind {
			case kindMarker:
				st.Marker++
			case kindBig:
				st.Big++
			case kindPoison:
				st.Poison++
			case kindRollback:
				st.Rollback++
			}
		}
		if r.Kind == kindRollback {
			rollbacksTo[r.RollbackOf] = append(rollbacksTo[r.RollbackOf], r)
		} else if r.EndOf == 0 {
			byNonce[r.Nonce] = r
		}
	}
	// Acknowledged publishes are in the history, item for item.
	for _, r := range records {
		if r.Outcome != outAcked {
			continue
		}
		e := v.history[r.Gen]
		switch {
		case e == nil:
			c.violate("P4-publish", -1, r.End, "publish #%d was acknowledged as generation %d, which is not in the history", r.Seq, r.Gen)
		case e.PublishID != r.PublishID:
			c.violate("P4-publish", -1, r.End, "publish #%d was acknowledged as generation %d (publish id %s), the history has publish id %s there",
				r.Seq, r.Gen, r.PublishID, e.PublishID)
		case !maps.Equal(e.Items, r.Items):
			c.violate("P4-publish", -1, r.End, "generation %d in the history differs from what publish #%d sent: %s", r.Gen, r.Seq, diffSets(r.Items, e.Items, c))
		case e.RollbackOf != r.RollbackOf:
			c.violate("P4-publish", -1, r.End, "generation %d records rollback_of %d, publish #%d asked for %d", r.Gen, e.RollbackOf, r.Seq, r.RollbackOf)
		case r.Mode.String() != "auto" && e.Mode != r.Mode.String():
			c.violate("P4-publish", -1, r.End, "publish #%d asked for %s mode, generation %d records %s", r.Seq, r.Mode, r.Gen, e.Mode)
		case e.Mode != r.ResMode:
			c.violate("P4-publish", -1, r.End, "publish #%d reported %s mode, generation %d records %s", r.Seq, r.ResMode, r.Gen, e.Mode)
		}
	}
	// Every generation belongs to exactly one attempt.
	landed := map[*pubRecord][]int64{}
	for _, g := range gens {
		e := v.history[g]
		if e.PromoteOf > 0 || e.AbortOf > 0 {
			c.checkRolloutEnd(v, g, records, now)
			continue
		}
		if e.RollbackOf > 0 {
			if src := v.history[e.RollbackOf]; src != nil && !maps.Equal(src.Items, e.Items) {
				c.violate("P4-publish", -1, now, "generation %d is a rollback to %d but its items differ: %s", g, e.RollbackOf, diffSets(src.Items, e.Items, c))
			}
			var live []*pubRecord
			for _, r := range rollbacksTo[e.RollbackOf] {
				if r.Outcome != outFailed {
					live = append(live, r)
				}
			}
			n := 0
			for _, g2 := range gens {
				if v.history[g2].RollbackOf == e.RollbackOf {
					n++
				}
			}
			if n > len(live) {
				c.violate("P4-publish", -1, now, "%d generations roll back to %d, only %d such rollbacks were not reported as failed", n, e.RollbackOf, len(live))
			}
			continue
		}
		nonce := c.nonceOf[e.Items["app.json"].SHA]
		r := byNonce[nonce]
		if r == nil {
			c.violate("P4-publish", -1, now, "generation %d (publish id %s) matches no publish attempt", g, e.PublishID)
			continue
		}
		if !maps.Equal(e.Items, r.Items) {
			c.violate("P4-publish", -1, now, "generation %d carries request %s but differs from it: %s", g, nonce, diffSets(r.Items, e.Items, c))
		}
		landed[r] = append(landed[r], g)
	}
	for r, gs := range landed {
		if len(gs) > 1 {
			c.violate("P4-publish", -1, r.End, "publish #%d (%s) landed %d times: generations %v", r.Seq, r.Kind, len(gs), gs)
		}
		if r.Outcome == outFailed {
			c.violate("P4-publish", -1, r.End, "publish #%d was reported as failed (%s) but landed as generation %v", r.Seq, oneLine(r.Err), gs)
		}
	}
	c.checkRefusals(records, landed)
	for _, r := range records {
		if r.Outcome == outUnknown && r.Kind != kindRollback && r.EndOf == 0 {
			if len(landed[r]) > 0 {
				st.UnknownLanded++
			} else {
				st.UnknownNotLanded++
			}
		}
	}
	// Rollbacks of unknown outcome: the entries rolling back to a
	// generation, beyond the acknowledged ones, are the ones that landed.
	for to, rs := range rollbacksTo {
		acked, unknown := 0, 0
		for _, r := range rs {
			switch r.Outcome {
			case outAcked:
				acked++
			case outUnknown:
				unknown++
			}
		}
		n := 0
		for _, g := range gens {
			if v.history[g].RollbackOf == to {
				n++
			}
		}
		l := min(max(n-acked, 0), unknown)
		st.UnknownLanded += l
		st.UnknownNotLanded += unknown - l
	}
	return st
}
