package cache_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkconf/zkconf/cache"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/zkclient"
)

// zooKeeper is the throw-away server the examples run against (the one
// the package's tests share); an application passes the addresses of its
// own ensemble instead.
var zooKeeper = cache.SharedZooKeeper()

// TestMain stops the examples' server after the run and then checks that
// no test left a goroutine behind (every cache's Close stops its own).
func TestMain(m *testing.M) {
	code := m.Run()
	zooKeeper.Stop()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// publishApp publishes app.json as the next generation of root, the way
// confpush (or any zkconf publisher) does.
func publishApp(ctx context.Context, cfg zkclient.Config, root, appJSON string) {
	cl, err := zkclient.Dial(cfg)
	if err != nil {
		panic(err)
	}
	defer cl.Close()
	p, err := publish.New(cl, root)
	if err != nil {
		panic(err)
	}
	if _, err := p.Publish(ctx, publish.Request{Items: map[string][]byte{"app.json": []byte(appJSON)}}); err != nil {
		panic(err)
	}
}

// An application follows a config root: it waits for the first
// generation, decodes an item, and picks up every later publish.
func Example_follow() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := zkclient.Config{Servers: zooKeeper.Addrs(), SessionTimeout: 4 * time.Second}
	publishApp(ctx, cfg, "/config/web", `{"greeting": "hello", "workers": 4}`)

	// The application's ZooKeeper client; it replaces its connection if
	// the servers ever refuse the session, and the cache follows.
	client, err := zkclient.Dial(cfg)
	if err != nil {
		fmt.Println("dial:", err)
		return
	}
	defer client.Close()

	c, err := cache.New(ctx, "/config/web", cache.WithClient(client))
	if err != nil {
		fmt.Println("cache:", err)
		return
	}
	defer c.Close()

	type app struct {
		Greeting string `json:"greeting"`
		Workers  int    `json:"workers"`
	}
	show := func(snap *cache.Snapshot) {
		raw, ok := snap.Get("app.json") // shared bytes: never modify them
		if !ok {
			fmt.Println("no app.json in generation", snap.Generation())
			return
		}
		var a app
		if err := json.Unmarshal(raw, &a); err != nil {
			fmt.Println("app.json:", err)
			return
		}
		fmt.Printf("generation %d: greeting=%s workers=%d\n", snap.Generation(), a.Greeting, a.Workers)
	}

	snap, err := c.Wait(ctx, 1) // the first generation
	if err != nil {
		fmt.Println("wait:", err)
		return
	}
	show(snap)

	// The next publish reaches the cache through its watch; a long-running
	// application reads c.Updates() in its select loop instead of waiting.
	publishApp(ctx, cfg, "/config/web", `{"greeting": "bonjour", "workers": 8}`)
	if snap, err = c.Wait(ctx, snap.Generation()+1); err != nil {
		fmt.Println("wait:", err)
		return
	}
	show(snap)
	// Output:
	// generation 1: greeting=hello workers=4
	// generation 2: greeting=bonjour workers=8
}

// StateInfo.Err says why a cache is not Live; an application branches on
// it with errors.Is (and errors.As for the details of typed errors).
func ExampleStateInfo() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := cache.New(ctx, "/config/not-yet", cache.WithServers(zooKeeper.Addrs(), 4*time.Second))
	if err != nil {
		fmt.Println("cache:", err)
		return
	}
	defer c.Close()

	describe := func(st cache.StateInfo) string {
		var mismatch *manifest.ItemMismatchError
		switch {
		case st.State == cache.StateLive:
			return fmt.Sprintf("live at generation %d", st.Generation)
		case errors.Is(st.Err, zkclient.ErrAuthFailed): // before ErrDisconnected, which it matches too
			return "ZooKeeper refused the credentials"
		case errors.Is(st.Err, cache.ErrRootMissing), errors.Is(st.Err, cache.ErrNotPublished):
			return "nothing published yet; waiting for the first publish"
		case errors.Is(st.Err, cache.ErrDisconnected), errors.Is(st.Err, cache.ErrResyncing),
			errors.Is(st.Err, zkclient.ErrSessionExpired), errors.Is(st.Err, cache.ErrNotSynced):
			return "serving what it holds; ZooKeeper is not confirming it right now"
		case errors.Is(st.Err, cache.ErrPublishInProgress), errors.Is(st.Err, cache.ErrAbandonedMarker):
			return "a marker-mode publish blocks the root; serving the held generation"
		case errors.As(st.Err, &mismatch):
			return fmt.Sprintf("item %q does not match its manifest; serving the held generation", mismatch.Item)
		case errors.Is(st.Err, manifest.ErrForeign), errors.Is(st.Err, manifest.ErrFutureFormat):
			return "the root is not a manifest this version understands"
		case errors.Is(st.Err, cache.ErrIncarnationRefused):
			return "the root holds a new history; an operator must adopt it"
		case errors.Is(st.Err, cache.ErrRefused), errors.Is(st.Err, cache.ErrConnClosed):
			return "the connection cannot recover on its own"
		case st.Err != nil:
			return "not live: " + st.Err.Error()
		default:
			return "starting"
		}
	}

	// Nobody has published this root. The cache starts without a session,
	// says what it found once it has read ZooKeeper, and keeps watching
	// for the root to appear.
	st := c.State()
	for errors.Is(st.Err, cache.ErrDisconnected) || errors.Is(st.Err, cache.ErrResyncing) {
		select {
		case st = <-c.StateChanges():
		case <-ctx.Done():
			fmt.Println("no answer from ZooKeeper within a minute")
			return
		}
	}
	fmt.Println(describe(st))
	// Output:
	// nothing published yet; waiting for the first publish
}

// An application reads a shared root beside its own, on one session, and
// uses only combinations of their generations that were live together:
// a cut.
func ExampleGroup() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := zkclient.Config{Servers: zooKeeper.Addrs(), SessionTimeout: 4 * time.Second}
	publishApp(ctx, cfg, "/example/common", `{"db": "db1.example.com"}`)
	publishApp(ctx, cfg, "/example/web", `{"greeting": "hello"}`)

	client, err := zkclient.Dial(cfg)
	if err != nil {
		fmt.Println("dial:", err)
		return
	}
	defer client.Close()
	g, err := cache.NewGroup(ctx, map[string]string{"common": "/example/common", "web": "/example/web"},
		cache.WithClient(client))
	if err != nil {
		fmt.Println("group:", err)
		return
	}
	defer g.Close()

	show := func(cut cache.Cut) {
		common, _ := cut["common"].Get("app.json") // shared bytes: never modify them
		web, _ := cut["web"].Get("app.json")
		fmt.Printf("common %d %s, web %d %s\n", cut["common"].Generation(), common, cut["web"].Generation(), web)
	}
	cut, err := g.Wait(ctx, nil) // the first cut
	if err != nil {
		fmt.Println("wait:", err)
		return
	}
	show(cut)

	// A publish to the shared root gives a new cut; a long-running
	// application reads g.Updates() in its select loop instead of waiting.
	publishApp(ctx, cfg, "/example/common", `{"db": "db2.example.com"}`)
	if cut, err = g.Wait(ctx, map[string]int64{"common": 2}); err != nil {
		fmt.Println("wait:", err)
		return
	}
	show(cut)
	// Output:
	// common 1 {"db": "db1.example.com"}, web 1 {"greeting": "hello"}
	// common 2 {"db": "db2.example.com"}, web 1 {"greeting": "hello"}
}
