package dashboard

import (
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/fleet"
)

// seen sets a row's last_seen for an agent with a trusted status node:
// now while the view is live (the node is ephemeral, so it exists only
// while the agent's session does, and the view's watches drop it within
// the settle delay when it goes), else the time the view last read it.
// The registry node's last_seen, which row puts there, is refreshed only
// every fleet.RegistryRefresh: minutes old for an agent that is running.
func (s *Server) seen(r *AgentRow, a fleet.Agent, snap *snapshot) {
	if !a.Trusted() {
		return
	}
	if snap.Connected && s.cl.Conn().State() == zk.StateHasSession {
		r.LastSeen = time.Now().UTC()
		return
	}
	if snap.ReadAt.After(r.LastSeen) {
		r.LastSeen = snap.ReadAt.UTC()
	}
}

// missingRoot is the 404 of a root the dashboard follows (its metadata
// exists: agents following it, or history) while the root's znode does
// not: a root deleted, or one agents are configured with that nothing
// was ever published to (a typo in their root setting).
func missingRoot(root string, snap *snapshot) notFound {
	followers := 0
	for _, a := range snap.Agents {
		if a.HasNode || a.Registration != nil {
			followers++
		}
	}
	if followers == 0 {
		return notFound{fmt.Sprintf("root %s does not exist (nothing was ever published there, or it was deleted)", root)}
	}
	return notFound{fmt.Sprintf("root %s does not exist (nothing was ever published there, or it was deleted), "+
		"yet %d agent(s) follow it: check their root setting", root, followers)}
}
