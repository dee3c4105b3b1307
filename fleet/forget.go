package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/zkclient"
)

// UnknownAgentsError is Forget naming agents that have no registry node:
// nothing was forgotten.
type UnknownAgentsError struct {
	// Registry is the agent registry's path; IDs the unknown agents.
	Registry string
	IDs      []string
}

func (e *UnknownAgentsError) Error() string {
	return fmt.Sprintf("not registered under %s: %s; nothing forgotten ('confpush status' lists the agents)",
		e.Registry, strings.Join(e.IDs, ", "))
}

// Forgotten is an agent Forget removed from the registry, with what
// still makes it show up.
type Forgotten struct {
	ID string
	// Running: its status node is trusted, so it is still running and
	// registers again on its next session or refresh.
	Running bool
	// Named: the access policy names its identity, so it stays expected
	// until `confpush init` runs without it.
	Named bool
}

// Forget deletes the registry node of each agent in ids, so that rollouts
// stop waiting for it and it no longer shows as gone: all of them in one
// transaction, or none. Agents without a registry node fail it with an
// *UnknownAgentsError; a registry node that changes meanwhile (an agent
// registering again) fails it with an error wrapping zk.ErrBadVersion or
// zk.ErrNoNode. It returns the agents forgotten, sorted, once each.
func (f *Fleet) Forget(ctx context.Context, ids []string) ([]Forgotten, error) {
	conn, p := f.cl.Conn(), f.paths
	agents, err := f.List(ctx)
	if err != nil {
		return nil, err
	}
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	var unknown []string
	var ops []any
	for _, id := range ids {
		ok, st, err := conn.Exists(p.AgentNode(id))
		if err != nil {
			return nil, fmt.Errorf("read the registry node of %s: %w", id, err)
		}
		if !ok {
			unknown = append(unknown, id)
			continue
		}
		ops = append(ops, &zk.DeleteRequest{Path: p.AgentNode(id), Version: st.Version})
	}
	if len(unknown) > 0 {
		return nil, &UnknownAgentsError{Registry: p.Agents(), IDs: unknown}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if res, err := conn.Multi(ops...); err != nil {
		if errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode) {
			return nil, fmt.Errorf("a registry node changed meanwhile (an agent registering again?); nothing forgotten, retry: %w", err)
		}
		return nil, zkclient.ExplainMulti(err, ops, res)
	}
	out := make([]Forgotten, 0, len(ids))
	for _, id := range ids {
		fg := Forgotten{ID: id}
		if i := slices.IndexFunc(agents, func(ag Agent) bool { return ag.ID == id }); i >= 0 {
			fg.Running, fg.Named = agents[i].Trusted(), agents[i].Named
		}
		out = append(out, fg)
	}
	return out, nil
}
