// Command zkconfuser is an application outside the zkconf module: it uses
// the library only through its public packages, the way a user's program
// does. internal/apicheck's TestExternalModule builds it in a module of its
// own, vets it, and runs it against a real ZooKeeper.
//
// It names every error the package documentation of cache, publish, fleet,
// rollout, zkclient and manifest tells callers to branch on, so it stops compiling
// when one of them is unexported or moved to an internal package. It prints
// one line per step, naming the branch it took.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/cache"
	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/rollout"
	"github.com/zkconf/zkconf/zkclient"
)

func main() {
	servers := flag.String("zk", "127.0.0.1:2181", "ZooKeeper servers, comma-separated host:port")
	root := flag.String("root", "/config/app", "config root to publish and follow")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, strings.Split(*servers, ","), *root); err != nil {
		fmt.Fprintln(os.Stderr, "zkconfuser:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, servers []string, root string) error {
	quiet := slog.New(slog.DiscardHandler)
	cfg := zkclient.Config{Servers: servers, SessionTimeout: 4 * time.Second, Logger: quiet}
	if err := cfg.Validate(); err != nil {
		return err
	}

	// Publish: a set of two items, then a change to one of them, on the
	// application's own connection (zkclient.Fixed).
	conn, sess, err := zkclient.DialConn(cfg)
	if err != nil {
		return fmt.Errorf("dial: %s", dialBranch(err))
	}
	defer conn.Close()
	own := zkclient.Fixed(conn, sess)
	p, err := publish.New(own, root, publish.WithLogger(quiet))
	if err != nil {
		return err
	}
	items := map[string][]byte{
		"app.json":    []byte(`{"workers": 4}`),
		"feature.txt": []byte("off"),
	}
	res, err := p.Publish(ctx, publish.Request{Items: items})
	if err != nil {
		return fmt.Errorf("publish: %s: %w", publishBranch(err), err)
	}
	fmt.Printf("publish: generation %d, %d items, added %v\n", res.Generation, len(res.Manifest.Items), res.Added)
	reviewed := res.Generation
	items["feature.txt"] = []byte("on")
	if res, err = p.Publish(ctx, publish.Request{Items: items, ExpectGeneration: reviewed}); err != nil {
		return fmt.Errorf("publish: %s: %w", publishBranch(err), err)
	}
	fmt.Printf("publish: generation %d, changed %v\n", res.Generation, res.Changed)
	live := res.Generation

	// A publish based on a generation that is no longer live.
	items["feature.txt"] = []byte("off")
	_, err = p.Publish(ctx, publish.Request{Items: items, ExpectGeneration: reviewed})
	fmt.Println("stale publish:", publishBranch(err))

	// Bad input changes nothing.
	if err := manifest.ValidateName("../escape"); err != nil {
		fmt.Println("name ../escape: invalid")
	}
	_, err = p.Publish(ctx, publish.Request{Items: map[string][]byte{"../escape": []byte("x")}})
	fmt.Println("bad publish:", publishBranch(err))

	// A root the identity may not write: its parent is read-only.
	if _, err := conn.Create("/readonly", nil, 0, zk.WorldACL(zk.PermRead)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return err
	}
	locked, err := publish.New(own, "/readonly/app", publish.WithLogger(quiet))
	if err != nil {
		return err
	}
	_, err = locked.Publish(ctx, publish.Request{Items: items})
	fmt.Println("publish under a read-only node:", publishBranch(err))

	// History: the retained generations, what each changed, and a set
	// diffed against the live one, as confpush history --diff and diff do.
	gens, err := p.Generations(ctx)
	if err != nil {
		return err
	}
	hist, err := p.History(ctx)
	if err != nil {
		return err
	}
	diffs, err := p.HistoryDiffs(ctx, hist)
	if err != nil {
		return err
	}
	fmt.Printf("history: generations %v; 2 against %d changed %v\n", gens, diffs[2].Against, diffs[2].Changed)
	d := publish.DiffSets(items, map[string][]byte{"app.json": items["app.json"]}, "live", "local")
	fmt.Printf("diff: removed %v, empty %t\n", d.Removed, d.Empty())

	// A key tree written with raw calls, as confd users have, read at one
	// instant for an import.
	for _, n := range []struct{ path, data string }{{"/legacy", ""}, {"/legacy/db", ""}, {"/legacy/db/host", "host"}} {
		if _, err := conn.Create(n.path, []byte(n.data), 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	tree, err := publish.ReadKeyTree(ctx, own, "/legacy")
	if err != nil {
		return err
	}
	fmt.Printf("key tree: db/host=%q, %d skipped\n", tree.Items["db/host"], len(tree.Skipped))

	// Follow the root, as an application does, on a client that replaces
	// a refused connection itself.
	client, err := zkclient.Dial(cfg)
	if err != nil {
		return fmt.Errorf("dial: %s", dialBranch(err))
	}
	defer client.Close()
	c, err := cache.New(ctx, root, cache.WithClient(client), cache.WithLogger(quiet))
	if err != nil {
		return err
	}
	defer c.Close()
	snap, err := c.Wait(ctx, live)
	if err != nil {
		return fmt.Errorf("cache: %s: %w", stateBranch(err), err)
	}
	raw, _ := snap.Get("app.json")
	var app struct {
		Workers int `json:"workers"`
	}
	if err := json.Unmarshal(raw, &app); err != nil {
		return err
	}
	feature, _ := snap.Get("feature.txt")
	fmt.Printf("cache: generation %d, workers=%d, feature=%s, state %s\n", snap.Generation(), app.Workers, feature, stateBranch(c.State().Err))

	// Follow a root nobody published.
	missing, err := cache.New(ctx, root+"-missing", cache.WithClient(client), cache.WithLogger(quiet))
	if err != nil {
		return err
	}
	st := missing.State()
	for errors.Is(st.Err, cache.ErrDisconnected) || errors.Is(st.Err, cache.ErrResyncing) {
		select {
		case st = <-missing.StateChanges():
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	fmt.Println("cache of an unpublished root:", stateBranch(st.Err))
	_ = missing.Close()
	_, err = missing.Wait(ctx, 1)
	fmt.Println("wait after close:", stateBranch(err))

	// The rollout: no agent follows the root.
	f, err := fleet.New(client, root)
	if err != nil {
		return err
	}
	_, err = f.Wait(ctx, live, fleet.WaitOptions{All: true})
	fmt.Println("rollout:", rolloutBranch(err))
	agents, err := f.List(ctx)
	if err != nil {
		return err
	}
	fmt.Println("fleet:", fleet.Summarize(agents, live))
	rep, err := f.Report(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("report: live generation %d, failing %v\n", rep.Live.Generation, rep.Failing)

	// A canary that selects no expected agent is refused, nothing written;
	// a driver needs a rollout.
	sel := manifest.Selection{Selector: "zone=a"}
	_, err = rollout.Start(ctx, p, f, publish.Request{Items: map[string][]byte{"feature.txt": []byte("canary\n")}, Canary: &sel}, false)
	fmt.Println("canary:", canaryBranch(err))
	_, err = rollout.Drive(ctx, p, f, rollout.Plan{})
	fmt.Println("drive:", canaryBranch(err))
	return nil
}

// canaryBranch names the branch a rollout.Start or rollout.Drive error
// takes.
func canaryBranch(err error) string {
	var empty *rollout.EmptySelectionError
	switch {
	case err == nil:
		return "started"
	case errors.As(err, &empty):
		return fmt.Sprintf("refused: %s selects none of the %d expected agents", publish.DescribeSelection(empty.Selection), empty.Expected)
	case errors.Is(err, rollout.ErrEnded):
		return "ended elsewhere"
	case errors.Is(err, publish.ErrInvalidInput):
		return "invalid input"
	default:
		return "other: " + err.Error()
	}
}

// dialBranch names the documented dial errors.
func dialBranch(err error) string {
	switch {
	case errors.Is(err, zkclient.ErrTLS):
		return "tls"
	case errors.Is(err, zkclient.ErrAuthFailed):
		return "auth"
	default:
		return err.Error()
	}
}

// publishBranch names the branch a publish error takes, through every
// sentinel and typed error of package publish.
func publishBranch(err error) string {
	var (
		conflict *publish.ConflictError
		busy     *publish.MarkerBusyError
		tooLarge *publish.TooLargeError
		input    *publish.InputError
		mismatch *manifest.ItemMismatchError
	)
	switch {
	case err == nil:
		return "published"
	case errors.As(err, &conflict):
		return fmt.Sprintf("conflict (expected generation %d, live %d; ErrConflict %t)",
			conflict.Expected, conflict.Actual, errors.Is(err, publish.ErrConflict))
	case errors.As(err, &busy), errors.Is(err, publish.ErrMarkerBusy):
		return "marker busy"
	case errors.As(err, &tooLarge), errors.Is(err, publish.ErrTooLarge):
		return "too large"
	case errors.As(err, &input):
		return fmt.Sprintf("invalid input (*InputError; ErrInvalidInput %t)", errors.Is(err, publish.ErrInvalidInput))
	case errors.Is(err, publish.ErrInvalidInput):
		return "invalid input"
	case errors.Is(err, publish.ErrNotPublished), errors.Is(err, publish.ErrGenerationNotFound):
		return "nothing to read"
	case errors.Is(err, publish.ErrOutcomeUnknown):
		return "outcome unknown"
	case errors.As(err, &mismatch), errors.Is(err, manifest.ErrTorn):
		return "torn"
	case errors.Is(err, publish.ErrFenced):
		return "fenced"
	case errors.Is(err, publish.ErrGenerationExhausted):
		return "generations exhausted"
	case errors.Is(err, zkclient.ErrSessionExpired):
		return "session expired"
	case errors.Is(err, zkclient.ErrPermission):
		return "permission denied"
	case errors.Is(err, zkclient.ErrAuthFailed):
		return "auth"
	default:
		return "other: " + err.Error()
	}
}

// stateBranch names the branch a cache error (StateInfo.Err, or what Wait
// returns) takes, through every error StateInfo.Err documents.
func stateBranch(err error) string {
	var (
		abandoned   *cache.AbandonedMarkerError
		mismatch    *manifest.ItemMismatchError
		backwards   *cache.BackwardsError
		incarnation *cache.IncarnationError
	)
	switch {
	case err == nil:
		return "live"
	case errors.Is(err, cache.ErrClosed):
		return "closed"
	case errors.Is(err, zkclient.ErrAuthFailed): // before ErrDisconnected, which it matches too
		return "auth"
	case errors.Is(err, cache.ErrRootMissing):
		return "root missing"
	case errors.Is(err, cache.ErrNotPublished):
		return "not published"
	case errors.Is(err, cache.ErrDisconnected), errors.Is(err, cache.ErrResyncing),
		errors.Is(err, cache.ErrNotSynced):
		return "not confirmed by ZooKeeper"
	case errors.Is(err, zkclient.ErrSessionExpired):
		return "session expired"
	case errors.Is(err, cache.ErrPublishInProgress):
		return "publish in progress"
	case errors.As(err, &abandoned), errors.Is(err, cache.ErrAbandonedMarker):
		return "abandoned marker"
	case errors.As(err, &mismatch), errors.Is(err, manifest.ErrTorn):
		return "torn"
	case errors.As(err, &backwards), errors.Is(err, cache.ErrBackwards):
		return "backwards"
	case errors.As(err, &incarnation), errors.Is(err, cache.ErrIncarnationRefused):
		return "new incarnation refused"
	case errors.Is(err, manifest.ErrForeign), errors.Is(err, manifest.ErrFutureFormat):
		return "not a manifest this version reads"
	case errors.Is(err, cache.ErrRefused), errors.Is(err, cache.ErrConnClosed):
		return "connection lost for good"
	default:
		return "other: " + err.Error()
	}
}

// rolloutBranch names the branch a Fleet.Wait error takes.
func rolloutBranch(err error) string {
	var rollout *fleet.RolloutError
	switch {
	case err == nil:
		return "applied"
	case errors.Is(err, fleet.ErrNoExpectedAgents):
		return "no expected agents"
	case errors.As(err, &rollout):
		return fmt.Sprintf("failed (rejected by %v, gone %v)", rollout.Progress.Rejected, rollout.Progress.Gone)
	default:
		return "other: " + err.Error()
	}
}
