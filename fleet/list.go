package fleet

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/aclmodel"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/work"
)

// This file is the listing of a fleet at one moment (List, Read): the
// status and registry nodes read in parallel on one connection and
// judged against the root's access policy.

// List reads every agent's status node of the root and the agent
// registry, and judges each status node (Agent.Untrusted): the agents
// sorted by id, expected ones without a trusted status node included
// (Gone). A root without any agent gives an empty list. A reader that
// cannot verify (without the publisher's ADMIN on an ACL'd tree) sees
// every node untrusted. It is Read without the skipped nodes: foreign ones
// are left out, oversized ones shown untrusted.
func (f *Fleet) List(ctx context.Context) ([]Agent, error) {
	v, err := f.Read(ctx)
	return v.Agents, err
}

// Read is List with the nodes it skipped: on a tree with an access policy
// the status and registry nodes whose name is not an agent identity of the
// policy are neither read nor expected; a node whose data is above
// MaxStatusBytes or MaxRegistrationBytes is not decoded (under a policy
// not even fetched). Its requests are sent at once on one connection
// (go-zookeeper pipelines concurrent requests): a listing costs a few
// round trips whatever the number of agents.
func (f *Fleet) Read(ctx context.Context) (View, error) {
	return read(ctx, f.cl.Conn(), f.paths, nil)
}

// maxInFlight bounds the requests a listing has in flight on the one
// connection: enough to keep it busy, few enough to bound the memory of
// the responses being decoded.
const maxInFlight = 1024

// forEach runs fn for every element of items, at most maxInFlight at a
// time: their ZooKeeper requests share the connection, pipelined.
func forEach[T any](ctx context.Context, items []T, fn func(int, T)) {
	_ = work.Parallel(ctx, len(items), maxInFlight, func(_ context.Context, i int) error {
		fn(i, items[i])
		return nil
	})
}

// listing is the first round of a read: the trust rules and both child
// lists.
type listing struct {
	trust    aclmodel.Trust
	trustErr error
	status   []string
	regs     []string
}

// readListing reads the trust rules beside the registry listing, then
// the status listing; between (nil but in tests) runs between the two
// listings. The registry comes first: an agent creates its status node
// before its registry node, so an agent registered by the first listing
// whose status node still exists is in the second. The other order showed
// an agent starting between the two as gone.
func readListing(ctx context.Context, conn *zk.Conn, p layout.Paths, between func()) (listing, error) {
	var (
		l         listing
		statusErr error
		wg        sync.WaitGroup
	)
	wg.Go(func() { l.trust, l.trustErr = readTrust(ctx, conn, p) })
	regs, regsErr := listRegistry(conn, p)
	l.regs = regs
	if regsErr == nil {
		if between != nil {
			between()
		}
		l.status, _, statusErr = conn.Children(p.Status())
		if errors.Is(statusErr, zk.ErrNoNode) {
			statusErr = nil
		}
	}
	wg.Wait()
	if statusErr != nil {
		return l, fmt.Errorf("list agents under %s: %w", p.Status(), statusErr)
	}
	return l, regsErr
}

// foreign reports whether a node named id is foreign to the trust's
// policy: never in open mode, nor for a reader that cannot verify (it
// sees every node untrusted).
func foreign(t aclmodel.Trust, trustErr error, id string) bool {
	return trustErr == nil && !t.Open() && !t.Names(id)
}

func read(ctx context.Context, conn *zk.Conn, p layout.Paths, between func()) (View, error) {
	l, err := readListing(ctx, conn, p, between)
	if err != nil {
		return View{}, err
	}
	var f View
	var ids, regs []string
	for _, id := range l.status {
		if foreign(l.trust, l.trustErr, id) {
			f.Skipped = append(f.Skipped, Skipped{ID: id, Node: NodeStatus, Reason: SkipForeign})
		} else {
			ids = append(ids, id)
		}
	}
	for _, id := range l.regs {
		if foreign(l.trust, l.trustErr, id) {
			f.Skipped = append(f.Skipped, Skipped{ID: id, Node: NodeRegistration, Reason: SkipForeign})
		} else {
			regs = append(regs, id)
		}
	}
	out := make([]Agent, len(ids))
	oversized := make([]int, len(ids))
	regOut := make([]registration, len(regs))
	var wg sync.WaitGroup
	wg.Go(func() {
		forEach(ctx, ids, func(i int, id string) { out[i], oversized[i] = readStatus(conn, p, l.trust, l.trustErr, id) })
	})
	wg.Go(func() {
		forEach(ctx, regs, func(i int, id string) { regOut[i] = readRegistration(conn, p, l.trust, l.trustErr, id) })
	})
	wg.Wait()
	for i, n := range oversized {
		if n > 0 {
			f.Skipped = append(f.Skipped, Skipped{ID: out[i].ID, Node: NodeStatus, Reason: SkipOversized, Bytes: n})
		}
	}
	// Agents that left between the listing and the read are not agents.
	out = slices.DeleteFunc(out, func(a Agent) bool { return errors.Is(a.Err, zk.ErrNoNode) })
	byID := map[string]int{}
	for i, a := range out {
		byID[a.ID] = i
	}
	expect := func(id string) *Agent {
		i, ok := byID[id]
		if !ok {
			out = append(out, Agent{ID: id})
			i = len(out) - 1
			byID[id] = i
		}
		out[i].Expected = true
		return &out[i]
	}
	for _, id := range l.trust.Agents() {
		expect(id).Named = true
	}
	for i, id := range regs {
		r := regOut[i]
		if r.gone {
			continue
		}
		a := expect(id)
		a.Registration, a.RegistryUntrusted = r.reg, r.untrusted
		if r.oversized > 0 {
			f.Skipped = append(f.Skipped, Skipped{ID: id, Node: NodeRegistration, Reason: SkipOversized, Bytes: r.oversized})
		}
	}
	for i := range out {
		if out[i].Trusted() {
			out[i].Expected = true
		}
	}
	slices.SortFunc(out, func(a, b Agent) int { return strings.Compare(a.ID, b.ID) })
	slices.SortFunc(f.Skipped, func(a, b Skipped) int {
		return cmp.Or(strings.Compare(a.Node, b.Node), strings.Compare(a.ID, b.ID))
	})
	f.Agents = out
	return f, ctx.Err()
}

// listRegistry lists the registered agents (none when the registry does
// not exist).
func listRegistry(conn *zk.Conn, p layout.Paths) ([]string, error) {
	ids, _, err := conn.Children(p.Agents())
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list the agent registry %s: %w", p.Agents(), err)
	}
	return ids, nil
}

// oversizedReason is the Untrusted reason of a node above its bound.
func oversizedReason(n, bound int) string {
	return fmt.Sprintf("oversized: %d bytes, above the %d-byte bound: not read", n, bound)
}

// readStatus reads and judges one status node; oversized is its data
// length when it is above MaxStatusBytes (then not decoded). Under a
// policy its ACL is read first: the Stat that comes with it tells an
// oversized node, whose data is then never fetched. A node re-created (or
// re-ACL'd) between the two reads is read again, once: an ACL and data of
// two different nodes are never judged together.
func readStatus(conn *zk.Conn, p layout.Paths, trust aclmodel.Trust, trustErr error, id string) (a Agent, oversized int) {
	node := p.StatusNode(id)
	if trustErr != nil || trust.Open() {
		b, st, err := conn.Get(node)
		if err == nil && len(b) > MaxStatusBytes {
			return oversizedStatus(id, len(b)), len(b)
		}
		a := decode(id, b, err)
		if errors.Is(err, zk.ErrNoNode) {
			return a, 0
		}
		a.HasNode = true // unreadable is still a node
		a.Untrusted = judge(trust, trustErr, a, nil, st, err)
		return a, 0
	}
	for range 2 {
		acl, ast, err := conn.GetACL(node)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return Agent{ID: id, Err: err}, 0
		case err != nil:
			a = Agent{ID: id, HasNode: true, Err: err}
			a.Untrusted = judge(trust, nil, a, nil, nil, err)
			return a, 0
		case int(ast.DataLength) > MaxStatusBytes:
			return oversizedStatus(id, int(ast.DataLength)), int(ast.DataLength)
		}
		b, st, err := conn.Get(node)
		a = decode(id, b, err)
		if errors.Is(err, zk.ErrNoNode) {
			return a, 0
		}
		a.HasNode = true // unreadable is still a node
		if err == nil && (st.Czxid != ast.Czxid || st.Aversion != ast.Aversion) {
			a.Untrusted = "changed while it was read"
			continue
		}
		if err == nil && len(b) > MaxStatusBytes {
			return oversizedStatus(id, len(b)), len(b)
		}
		a.Untrusted = judge(trust, nil, a, acl, st, err)
		return a, 0
	}
	return a, 0
}

// oversizedStatus is the agent of a status node above MaxStatusBytes: a
// node, untrusted, not decoded.
func oversizedStatus(id string, n int) Agent {
	return Agent{ID: id, HasNode: true, Untrusted: oversizedReason(n, MaxStatusBytes)}
}

// judge returns why status node a (its ACL and Stat as read, readErr the
// first read error) is not provably its agent's, or "".
func judge(trust aclmodel.Trust, trustErr error, a Agent, acl []zk.ACL, st *zk.Stat, readErr error) string {
	switch {
	case trustErr != nil:
		return "cannot be verified: " + trustErr.Error()
	case errors.Is(readErr, zk.ErrNoAuth):
		return aclmodel.Unreadable(readErr)
	case readErr != nil:
		return "cannot be read: " + readErr.Error()
	case a.Err != nil:
		return a.Err.Error()
	}
	if r := trust.JudgeStatus(a.ID, acl, st); r != "" {
		return r
	}
	if a.Status.AgentID != a.ID {
		return fmt.Sprintf("its agent_id %q is not its name", a.Status.AgentID)
	}
	return ""
}

func decode(id string, b []byte, err error) Agent {
	a := Agent{ID: id}
	if err != nil {
		a.Err = err
		return a
	}
	a.HasNode = true
	if err := json.Unmarshal(b, &a.Status); err != nil {
		a.Err = fmt.Errorf("status of %s is not valid JSON: %w", id, err)
	}
	return a
}

// registration is one registry node as read.
type registration struct {
	reg       *Registration
	untrusted string
	oversized int
	gone      bool // deleted between the listing and the read
}

// readRegistration reads and judges one registry node. An unreadable,
// oversized or undecodable one has no Registration, only the reason.
// Under a policy its ACL is read first, as for status nodes.
func readRegistration(conn *zk.Conn, p layout.Paths, trust aclmodel.Trust, trustErr error, id string) registration {
	node := p.AgentNode(id)
	var acl []zk.ACL
	if trustErr == nil && !trust.Open() {
		var ast *zk.Stat
		var err error
		acl, ast, err = conn.GetACL(node)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return registration{gone: true}
		case err != nil:
			return registration{untrusted: "cannot read its ACL: " + err.Error()}
		case int(ast.DataLength) > MaxRegistrationBytes:
			n := int(ast.DataLength)
			return registration{untrusted: oversizedReason(n, MaxRegistrationBytes), oversized: n}
		}
	}
	b, _, err := conn.Get(node)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return registration{gone: true}
	case errors.Is(err, zk.ErrNoAuth):
		return registration{untrusted: aclmodel.Unreadable(err)}
	case err != nil:
		return registration{untrusted: "cannot be read: " + err.Error()}
	case len(b) > MaxRegistrationBytes:
		return registration{untrusted: oversizedReason(len(b), MaxRegistrationBytes), oversized: len(b)}
	}
	if len(b) == 0 {
		// Created by confpush init, not yet written by its agent.
		return registration{}
	}
	var r Registration
	if err := json.Unmarshal(b, &r); err != nil {
		return registration{untrusted: "not a registration: " + err.Error()}
	}
	var why string
	switch {
	case trustErr != nil:
		why = "cannot be verified: " + trustErr.Error()
	case !trust.Open():
		why = trust.JudgeRegistration(id, acl)
	}
	return registration{reg: &r, untrusted: why}
}
