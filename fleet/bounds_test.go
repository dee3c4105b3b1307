package fleet_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/access"
	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/zkclient"
)

// ownStatus is a status node's data claiming generation g, as agent id.
func ownStatus(t *testing.T, id string, g int64) []byte {
	t.Helper()
	b, err := json.Marshal(fleet.Status{AgentID: id, Root: root, Generation: g, Attempted: g, CacheGeneration: g,
		State: "live", Ready: true})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAgentIdentityFloodRefused is the flood an attacker holding one agent
// identity (web-1) ran against the previous release: 40 registrations and
// 40 status nodes of 1 MB under names of its choosing, sent at once, 2,000
// tiny registrations, an oversized status node and registration of its own.
// Every write past the bounds is refused (registrations by ACL: agents may
// not create them; status nodes by the status quota, with the classified
// quota error), the server stays up holding next to nothing, and a --all
// rollout completes with the honest agent (web-2) and web-1's own status
// node: nothing forged is waited for. On the code before the quotas the
// writes landed, the 256 MB test server ran out of heap, and the
// registrations that landed blocked the wait.
func TestAgentIdentityFloodRefused(t *testing.T) {
	c := zktest.Start(t)
	p, conn := securedTree(t, c, "web-1", "web-2")
	g := publishConf(t, p, "v1")
	startSecureAgent(t, c.Addrs(), "web-2")
	hostile := rawSession(t, c, "web-1")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	own, err := access.ReadStatusNodeACL(ctx, hostile, paths)
	if err != nil {
		t.Fatal(err)
	}

	big := make([]byte, 1_000_000)
	type write struct {
		path string
		err  error
	}
	var mu sync.Mutex
	var writes []write
	var wg sync.WaitGroup
	try := func(path string, fn func() error) {
		wg.Go(func() {
			err := fn()
			mu.Lock()
			writes = append(writes, write{path, err})
			mu.Unlock()
		})
	}
	for i := range 40 {
		reg, st := paths.AgentNode(fmt.Sprintf("big-%d", i)), paths.StatusNode(fmt.Sprintf("big-%d", i))
		try(reg, func() error { _, err := hostile.Create(reg, big, 0, own); return err })
		try(st, func() error { _, err := hostile.Create(st, big, zk.FlagEphemeral, own); return err })
	}
	for i := range 2000 {
		reg := paths.AgentNode("forged-" + strconv.Itoa(i))
		try(reg, func() error { _, err := hostile.Create(reg, []byte("{}"), 0, own); return err })
	}
	wg.Wait()
	for _, w := range writes {
		switch {
		case strings.HasPrefix(w.path, paths.Agents()+"/"):
			if !errors.Is(w.err, zk.ErrNoAuth) {
				t.Fatalf("registration %s by an agent identity: %v; want NoAuth", w.path, w.err)
			}
		case !zkclient.IsQuotaExceeded(w.err):
			t.Fatalf("status node %s under a foreign name: %v; want refused by the quota", w.path, w.err)
		}
	}

	// Its own nodes are bounded too.
	_, err = hostile.Create(paths.StatusNode("web-1"), make([]byte, fleet.MaxStatusBytes+1), zk.FlagEphemeral, own)
	if qe := zkclient.Explain(err, paths.StatusNode("web-1"), zkclient.OpCreate); !errors.Is(qe, zkclient.ErrQuotaExceeded) ||
		!strings.Contains(qe.Error(), "quota exceeded: create on "+paths.StatusNode("web-1")) {
		t.Errorf("oversized own status node: %v", qe)
	}
	_, err = hostile.Set(paths.AgentNode("web-1"), make([]byte, fleet.MaxRegistrationBytes+1), -1)
	if !zkclient.IsQuotaExceeded(err) {
		t.Errorf("oversized own registration: %v; want refused by the quota", err)
	}
	if _, err := hostile.Create(paths.StatusNode("web-1"), ownStatus(t, "web-1", g), zk.FlagEphemeral, own); err != nil {
		t.Fatalf("web-1's own status node within its bound: %v", err)
	}

	// The server is up and holds none of it.
	if _, err := c.Mode(0); err != nil {
		t.Fatalf("server after the flood: %v", err)
	}
	m, err := c.Mntr(0)
	if err != nil {
		t.Fatal(err)
	}
	if size, _ := strconv.Atoi(m["zk_approximate_data_size"]); size > 1<<20 {
		t.Errorf("the server holds %d bytes of data after the flood; want next to nothing", size)
	}
	pr, err := fleetOf(t, conn, paths.Root, paths.Meta).Wait(ctx, g, fleet.WaitOptions{All: true})
	if err != nil || !slices.Equal(pr.Applied, []string{"web-1", "web-2"}) {
		t.Fatalf("wait --all after the flood = %+v, %v; want web-1 and web-2 applied, nothing else expected", pr, err)
	}
}

// TestForeignRegistrationsNeverExpected: registrations whose names are no
// agent identity of the policy (left from before the quotas: agents could
// create them then; here made by the publisher's identity) are not read,
// not expected and do not block a --all wait; Read reports them, and
// confpush acl --repair deletes them. On the old code each was an
// expected, gone agent and the wait could not complete.
func TestForeignRegistrationsNeverExpected(t *testing.T) {
	c := zktest.Start(t)
	p, conn := securedTree(t, c, "web-1")
	g := publishConf(t, p, "v1")
	startSecureAgent(t, c.Addrs(), "web-1")
	var ops []any
	for i := range 500 {
		ops = append(ops, &zk.CreateRequest{Path: paths.AgentNode(fmt.Sprintf("forged-%03d", i)), Data: []byte("{}"),
			Acl: zk.WorldACL(zk.PermAll)})
	}
	if _, err := conn.Multi(ops...); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pr, err := fleetOf(t, conn, paths.Root, paths.Meta).Wait(ctx, g, fleet.WaitOptions{All: true})
	if err != nil || !slices.Equal(pr.Applied, []string{"web-1"}) || len(pr.Foreign) != 500 || pr.Needed != 1 {
		t.Fatalf("wait --all with 500 foreign registrations = applied %v, needed %d, %d foreign, %v; want web-1 alone",
			pr.Applied, pr.Needed, len(pr.Foreign), err)
	}
	f, err := fleetOf(t, conn, paths.Root, paths.Meta).Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Agents) != 1 || f.Agents[0].ID != "web-1" || !f.Agents[0].Trusted() {
		t.Errorf("agents %+v; want web-1 alone", f.Agents)
	}
	if len(f.Skipped) != 500 || f.Skipped[0] != (fleet.Skipped{ID: "forged-000", Node: fleet.NodeRegistration, Reason: fleet.SkipForeign}) {
		t.Errorf("skipped %d: %v", len(f.Skipped), f.Skipped[:min(3, len(f.Skipped))])
	}
	// An --auto canary judges the same list: a selection of everyone has
	// web-1 alone to wait for, never a gone forged agent.
	sel := &manifest.Canary{Generation: g + 1, Selection: manifest.Selection{}}
	if h := fleet.EvaluateCanary(fleet.ClassifyRollout(f.Agents, g, "", sel), time.Time{}, time.Now(), 0); len(h.Gone) != 0 || h.Selected != 1 {
		t.Errorf("canary health with 500 foreign registrations: %+v; want web-1 alone selected, nobody gone", h)
	}
	pol := access.Policy{Publisher: ident(t, "publisher"), Agents: []access.Identity{ident(t, "web-1")}}
	rep, err := access.Repair(ctx, conn, paths, pol)
	if err != nil || len(rep.Actions) != 500 || slices.ContainsFunc(rep.Remaining, access.Mismatch.Repairable) {
		t.Fatalf("repair: %d actions, remaining %v, %v; want the 500 foreign registrations deleted", len(rep.Actions), rep.Remaining, err)
	}
	kids, _, err := conn.Children(paths.Agents())
	if err != nil || !slices.Equal(kids, []string{"web-1"}) {
		t.Errorf("registry after repair: %v, %v", kids, err)
	}
}

// TestOversizedNodesSkipped: a status node or registration above its
// bound is not decoded: Read reports it (Skipped), the agent is shown
// untrusted, gone if expected. On an open tree anyone can write one; on a
// tree with a policy only past a tampered (or burst-overshot) quota, which
// confpush acl reports and --repair restores, deleting the node.
func TestOversizedNodesSkipped(t *testing.T) {
	t.Run("open", func(t *testing.T) {
		c := zktest.Start(t)
		p, conn := newPublisher(t, c)
		g := publishConf(t, p, "v1")
		for _, n := range []string{paths.Status(), paths.Agents()} {
			if err := zkclient.EnsurePath(context.Background(), conn, n, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
		}
		huge := append(ownStatus(t, "huge", g), make([]byte, fleet.MaxStatusBytes)...)
		if _, err := conn.Create(paths.StatusNode("huge"), huge, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Create(paths.AgentNode("fat"), make([]byte, fleet.MaxRegistrationBytes+1), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		f, err := fleetOf(t, conn, paths.Root, paths.Meta).Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []fleet.Skipped{
			{ID: "fat", Node: fleet.NodeRegistration, Reason: fleet.SkipOversized, Bytes: fleet.MaxRegistrationBytes + 1},
			{ID: "huge", Node: fleet.NodeStatus, Reason: fleet.SkipOversized, Bytes: len(huge)},
		}
		if !slices.Equal(f.Skipped, want) {
			t.Errorf("skipped %v; want %v", f.Skipped, want)
		}
		h, _ := find(f.Agents, "huge")
		if h.Trusted() || h.Applied(g) || !strings.Contains(h.Untrusted, "oversized") || h.Status.AgentID != "" {
			t.Errorf("huge = %+v; want untrusted, oversized, not decoded", h)
		}
		fat, _ := find(f.Agents, "fat")
		if !fat.Gone() || fat.Registration != nil || !strings.Contains(fat.RegistryUntrusted, "oversized") {
			t.Errorf("fat = %+v; want gone, registration skipped as oversized", fat)
		}
	})
	t.Run("policy", func(t *testing.T) {
		c := zktest.Start(t)
		p, conn := securedTree(t, c, "web-1")
		g := publishConf(t, p, "v1")
		pol := access.Policy{Publisher: ident(t, "publisher"), Agents: []access.Identity{ident(t, "web-1")}}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var q access.Quota
		for _, x := range pol.Quotas(paths) {
			if x.Path == paths.StatusNode("web-1") {
				q = x
			}
		}
		// Someone with the publisher's identity lifts web-1's limits.
		if _, err := conn.Set(q.Dir()+"/zookeeper_limits", []byte("count=-1,bytes=-1"), -1); err != nil {
			t.Fatal(err)
		}
		web1 := rawSession(t, c, "web-1")
		own, err := access.ReadStatusNodeACL(ctx, web1, paths)
		if err != nil {
			t.Fatal(err)
		}
		huge := append(ownStatus(t, "web-1", g), make([]byte, fleet.MaxStatusBytes)...)
		if _, err := web1.Create(paths.StatusNode("web-1"), huge, zk.FlagEphemeral, own); err != nil {
			t.Fatal(err)
		}
		f, err := fleetOf(t, conn, paths.Root, paths.Meta).Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(f.Skipped, []fleet.Skipped{{ID: "web-1", Node: fleet.NodeStatus, Reason: fleet.SkipOversized, Bytes: len(huge)}}) {
			t.Errorf("skipped %v", f.Skipped)
		}
		if a, _ := find(f.Agents, "web-1"); !a.Gone() || !strings.Contains(a.Untrusted, "oversized") {
			t.Errorf("web-1 = %+v; want gone (oversized)", a)
		}
		ms, err := access.Check(ctx, conn, paths, pol)
		if err != nil {
			t.Fatal(err)
		}
		fixes := map[string]access.Fix{}
		for _, m := range ms {
			fixes[m.Path] = m.Fix
		}
		if fixes[q.Dir()] != access.FixQuota || fixes[paths.StatusNode("web-1")] != access.FixDelete {
			t.Fatalf("check = %v; want the quota reset and the oversized node deleted", ms)
		}
		if rep, err := access.Repair(ctx, conn, paths, pol); err != nil || slices.ContainsFunc(rep.Remaining, access.Mismatch.Repairable) {
			t.Fatalf("repair: %v, remaining %v", err, rep.Remaining)
		}
		if _, err := web1.Create(paths.StatusNode("web-1"), huge, zk.FlagEphemeral, own); !zkclient.IsQuotaExceeded(err) {
			t.Errorf("oversized status node after repair: %v; want refused by the restored quota", err)
		}
	})
}
