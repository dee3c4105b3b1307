package main

import (
	"context"
	"fmt"
	"os"
	"os/user"

	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/publish"
)

// rolloutReasons says why each failing or gone agent of a rollout is so
// (by agent id), for rollout status's REASON column and "reason": the
// candidate's rejection, the failing target or the agent's error; a gone
// agent's missing or untrusted status node.
func rolloutReasons(agents []fleet.Agent, ras []fleet.RolloutAgent, candidate int64) map[string]string {
	byID := make(map[string]fleet.Agent, len(agents))
	for _, ag := range agents {
		byID[ag.ID] = ag
	}
	out := map[string]string{}
	for _, ra := range ras {
		ag := byID[ra.ID]
		switch ra.State {
		case fleet.StateFailing:
			why := failureOf(ag.Status)
			if ag.Rejected(candidate) {
				why = fmt.Sprintf("rejected generation %d: %s", ag.Status.Attempted, ag.Status.LastError)
			}
			out[ra.ID] = why
		case fleet.StateGone:
			switch {
			case ag.Err != nil:
				out[ra.ID] = "status node unreadable: " + ag.Err.Error()
			case ag.Untrusted != "":
				out[ra.ID] = "status node untrusted: " + ag.Untrusted
			case ag.Registration != nil:
				out[ra.ID] = "no status node (last seen " + ago(ag.Registration.LastSeen) + ")"
			default:
				out[ra.ID] = "no status node"
			}
		}
	}
	return out
}

// endMessage is the message a rollout promote or abort records when the
// operator gives none: the rollout's own message (who and why it started)
// with what ended it, as the driver records "(automatic promote after the
// bake)". Without a readable rollout record, what ended it alone.
func endMessage(ctx context.Context, p *publish.Publisher, kind, rolloutID string) string {
	what := "promoted by hand"
	if kind == publish.EventAbort {
		what = "aborted by hand"
	}
	if who := publisherName(); who != "" {
		what += " by " + who
	}
	rs, err := p.Rollout(ctx)
	if err != nil || rs.Record == nil || rs.Record.RolloutID != rolloutID || rs.Record.Message == "" {
		return what
	}
	msg := rs.Record.Message + " (" + what + ")"
	if publish.ValidateMessage(msg) != nil {
		return what
	}
	return msg
}

// publisherName is the operator's user name ("" when unknown); the
// history's PUBLISHER column has user@host.
func publisherName() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return os.Getenv("USER")
}
