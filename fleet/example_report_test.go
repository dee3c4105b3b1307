package fleet_test

import (
	"context"
	"fmt"
	"time"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/zkclient"
)

// A monitoring check reads the fleet's report, what `confpush status`
// prints: every agent judged against the live generation, and the agents
// the check fails for.
func ExampleFleet_Report() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const root = "/config/report"
	cfg := zkclient.Config{Servers: zooKeeper.Addrs(), SessionTimeout: 4 * time.Second}
	cl, err := zkclient.Dial(cfg)
	if err != nil {
		fmt.Println("dial:", err)
		return
	}
	defer cl.Close()
	p, err := publish.New(cl, root)
	if err != nil {
		fmt.Println("publisher:", err)
		return
	}
	f, err := fleet.New(cl, root)
	if err != nil {
		fmt.Println("fleet:", err)
		return
	}
	res, err := p.Publish(ctx, publish.Request{Items: map[string][]byte{"app.conf": []byte("workers = 4\n")}})
	if err != nil {
		fmt.Println("publish:", err)
		return
	}
	stop := exampleAgent(cfg, root, "web-1")
	defer stop()
	if _, err := f.Wait(ctx, res.Generation, fleet.WaitOptions{Min: 1}); err != nil {
		fmt.Println("wait:", err)
		return
	}

	r, err := f.Report(ctx)
	if err != nil {
		fmt.Println("report:", err)
		return
	}
	for _, a := range r.Agents {
		fmt.Printf("%s: %s\n", a.ID, a.State(r.Live.Generation))
	}
	fmt.Println(r.Summary)
	fmt.Println("failing:", r.Failing)
	// Output:
	// web-1: ok
	// 1 agent(s): 1 at generation 1, 0 behind, 0 failing, 0 untrusted, 0 gone
	// failing: []
}
