package publish_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/zkclient"
)

// zooKeeper is the throw-away server the examples run against; an
// application passes the addresses of its own ensemble instead.
var zooKeeper zktest.Shared

// TestMain stops the examples' server after the run.
func TestMain(m *testing.M) {
	code := m.Run()
	zooKeeper.Stop()
	publish.StopSharedZooKeeper()
	os.Exit(code)
}

// A publisher commits a whole set of items as the root's next generation:
// readers see all of it or none of it.
func ExamplePublisher_Publish() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := zkclient.Dial(zkclient.Config{Servers: zooKeeper.Addrs(), SessionTimeout: 4 * time.Second})
	if err != nil {
		fmt.Println("dial:", err)
		return
	}
	defer cl.Close()
	p, err := publish.New(cl, "/config/shop")
	if err != nil {
		fmt.Println("publisher:", err)
		return
	}

	items := map[string][]byte{
		"app.json": []byte(`{"workers": 4}`),
		"db.json":  []byte(`{"url": "postgres://db-1/shop"}`),
	}
	res, err := p.Publish(ctx, publish.Request{Items: items})
	if err != nil {
		fmt.Println("publish:", err)
		return
	}
	fmt.Println("generation", res.Generation, "added", res.Added)

	// The next set replaces the whole set; only what differs is written.
	items["db.json"] = []byte(`{"url": "postgres://db-2/shop"}`)
	if res, err = p.Publish(ctx, publish.Request{Items: items}); err != nil {
		fmt.Println("publish:", err)
		return
	}
	fmt.Println("generation", res.Generation, "changed", res.Changed)

	// The same set again writes nothing.
	if res, err = p.Publish(ctx, publish.Request{Items: items}); err != nil {
		fmt.Println("publish:", err)
		return
	}
	fmt.Println("generation", res.Generation, "unchanged", res.Unchanged)
	// Output:
	// generation 1 added [app.json db.json]
	// generation 2 changed [db.json]
	// generation 2 unchanged true
}

// A publish based on what a user reviewed sets ExpectGeneration, so that
// it does not overwrite a publish that landed meanwhile: it fails with
// ErrConflict instead, and the *ConflictError says which generation won.
func ExampleConflictError() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := zkclient.Dial(zkclient.Config{Servers: zooKeeper.Addrs(), SessionTimeout: 4 * time.Second})
	if err != nil {
		fmt.Println("dial:", err)
		return
	}
	defer cl.Close()
	p, err := publish.New(cl, "/config/billing")
	if err != nil {
		fmt.Println("publisher:", err)
		return
	}
	publishRate := func(rate string, expect int64) error {
		_, err := p.Publish(ctx, publish.Request{
			Items:            map[string][]byte{"rate.txt": []byte(rate)},
			ExpectGeneration: expect,
		})
		return err
	}

	// describe branches on the errors a publish documents.
	describe := func(err error) string {
		var conflict *publish.ConflictError
		switch {
		case err == nil:
			return "published"
		case errors.As(err, &conflict): // errors.Is(err, publish.ErrConflict) holds too
			return fmt.Sprintf("conflict: reviewed generation %d, live generation %d", conflict.Expected, conflict.Actual)
		case errors.Is(err, publish.ErrMarkerBusy):
			return "a marker-mode publish is in progress; try again later"
		case errors.Is(err, publish.ErrInvalidInput):
			return "bad input, nothing written: " + err.Error()
		case errors.Is(err, publish.ErrOutcomeUnknown):
			return "outcome unknown; look for it in the history"
		case errors.Is(err, zkclient.ErrPermission):
			return "this identity may not publish to the root"
		default:
			return err.Error()
		}
	}

	if err := publishRate("0.19", 0); err != nil {
		fmt.Println("publish:", describe(err))
		return
	}
	// Two operators review generation 1; both publish a change to it.
	fmt.Println("first change:", describe(publishRate("0.20", 1)))
	fmt.Println("second change:", describe(publishRate("0.21", 1)))
	// Output:
	// first change: published
	// second change: conflict: reviewed generation 1, live generation 2
}
