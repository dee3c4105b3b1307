package dashboard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/cmd/confpush/internal/dashboard"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/rollout"
)

type rolloutAgentsPage struct {
	Total  int `json:"total"`
	Agents []struct {
		ID           string `json:"id"`
		Generation   int64  `json:"generation"`
		RolloutState string `json:"rollout_state"`
		Selected     bool   `json:"selected"`
	} `json:"agents"`
}

// rows renders a page as "id:generation:rollout_state:selected|…".
func (p rolloutAgentsPage) rows() string {
	var out []string
	for _, a := range p.Agents {
		out = append(out, fmt.Sprintf("%s:%d:%s:%v", a.ID, a.Generation, a.RolloutState, a.Selected))
	}
	return fmt.Sprint(out)
}

// rolloutAgents fetches a page of the fleet table (path) into a new value:
// the fields a row omits must not keep an earlier row's values.
func (e *env) rolloutAgents(path string) rolloutAgentsPage {
	e.t.Helper()
	var p rolloutAgentsPage
	e.api(path, &p)
	return p
}

// waitRollout polls /api/root/rollout (served from the watched view)
// until cond holds.
func (e *env) waitRollout(what string, cond func(dashboard.RolloutView) bool) dashboard.RolloutView {
	e.t.Helper()
	return waitAPI(e, "/api/root/rollout?root="+url.QueryEscape(root), what, cond)
}

func eventKinds(evs []publish.RolloutEvent) string {
	var k []string
	for _, ev := range evs {
		k = append(k, ev.Kind)
	}
	return fmt.Sprint(k)
}

// TestRolloutAPI: /api/root/rollout without a rollout, during one (the
// selection, the driver, each step's progress, the agents outside, the
// record's events), after a widen and a promote; the fleet table's
// per-agent rollout state and its filter; the history's candidate and
// promote marks; a canary the selected agent's check refuses, then an
// abort.
func TestRolloutAPI(t *testing.T) {
	e := start(t, false)
	e.waitFleet("both agents at generation 1", allAt(1))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// No rollout: 200, in_progress false, rollout null, no rollout state
	// in the table.
	code, _, b := e.get("/api/root/rollout?root=/config")
	var raw map[string]json.RawMessage
	if code != http.StatusOK || json.Unmarshal(b, &raw) != nil || string(raw["rollout"]) != "null" ||
		string(raw["in_progress"]) != "false" || raw["last"] != nil {
		t.Fatalf("without a rollout: %d %s", code, b)
	}
	if code, _, b := e.get("/api/root/rollout?root=/nope"); code != http.StatusNotFound {
		t.Fatalf("unknown root: %d %s", code, b)
	}

	// A percent that selects the agent with the lower bucket alone, then
	// one that selects both.
	first, second := "host-a", "host-b"
	if manifest.Bucket(second) < manifest.Bucket(first) {
		first, second = second, first
	}
	if manifest.Bucket(first) == manifest.Bucket(second) {
		t.Fatal("host-a and host-b share a bucket: the test needs others")
	}
	p1 := float64(manifest.Bucket(first)+1) / 100
	p2 := float64(manifest.Bucket(second)+1) / 100
	sel1 := manifest.Selection{Percent: p1}
	res, err := e.pub.Publish(ctx, publish.Request{Message: "try more workers", Canary: &sel1,
		RolloutPlan: &publish.RolloutPlan{Steps: []float64{p1, p2, 100}, Bake: time.Minute, Auto: true},
		Items:       map[string][]byte{"app.conf": []byte("a=1\nb=2\nc=4\n"), "settings.json": []byte(`{"size": 1}`)}})
	if err != nil {
		t.Fatal(err)
	}
	cand := res.Generation
	v := e.waitRollout("the selected agent applied the candidate", func(v dashboard.RolloutView) bool {
		return v.InProgress && v.Rollout.Counts["applied"] == 1 && len(v.Rollout.Events) == 1
	})
	r := v.Rollout
	if r.Candidate != cand || r.Stable != 1 || v.Generation != 1 || r.Percent != p1 || r.Selector != "" ||
		r.Message != "try more workers" || r.RolloutID == "" || r.Driver != "gone" || r.DriverAlive || !r.Auto ||
		r.Bake != "1m0s" || r.Counts["stable"] != 1 || r.Outside != (rollout.OutsideProgress{Agents: 1, Stable: 1}) ||
		r.Events[0].Kind != publish.EventStart || r.Events[0].Generation != cand || v.Last != nil {
		t.Fatalf("rollout = %+v", v)
	}
	// Steps: the current one (first applied), the planned ones ahead.
	if len(r.Steps) != 3 || !r.Steps[0].Current || r.Steps[0].Agents != 1 || r.Steps[0].Applied != 1 ||
		!r.Steps[1].Planned || r.Steps[1].Percent != p2 || r.Steps[1].Agents != 2 || r.Steps[1].Applied != 0 || !r.Steps[2].Planned {
		t.Fatalf("steps = %+v", r.Steps)
	}
	page := e.rolloutAgents("/api/root/agents?root=/config")
	want := fmt.Sprint([]string{fmt.Sprintf("%s:%d:applied:true", first, cand), fmt.Sprintf("%s:1:stable:false", second)})
	if first == "host-b" {
		want = fmt.Sprint([]string{fmt.Sprintf("%s:1:stable:false", second), fmt.Sprintf("%s:%d:applied:true", first, cand)})
	}
	if page.rows() != want {
		t.Fatalf("fleet table = %s, want %s", page.rows(), want)
	}
	page = e.rolloutAgents("/api/root/agents?root=/config&rollout=applied")
	if page.Total != 1 || page.Agents[0].ID != first {
		t.Fatalf("rollout=applied: %s", page.rows())
	}
	var ag struct {
		Row struct {
			RolloutState string `json:"rollout_state"`
			Selected     bool   `json:"selected"`
		} `json:"row"`
	}
	e.api("/api/agent?root=/config&id="+first, &ag)
	if ag.Row.RolloutState != "applied" || !ag.Row.Selected {
		t.Fatalf("agent %s's row = %+v", first, ag.Row)
	}
	if code, _, b := e.get("/api/root/agents?root=/config&rollout=bogus"); code != http.StatusBadRequest {
		t.Fatalf("rollout=bogus: %d %s", code, b)
	}

	// A driver's liveness node (ephemeral, as the driver holds it) shows
	// it alive; its end shows it gone.
	drv := dial(t, e.zk)
	driverPath := layout.New(root, layout.DefaultMeta).RolloutDriver() + "/" + r.RolloutID
	if _, err := drv.Create(layout.New(root, layout.DefaultMeta).RolloutDriver(), nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	if _, err := drv.Create(driverPath, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	e.waitRollout("the driver alive", func(v dashboard.RolloutView) bool { return v.InProgress && v.Rollout.Driver == "alive" })
	if err := drv.Delete(driverPath, -1); err != nil {
		t.Fatal(err)
	}
	e.waitRollout("the driver gone", func(v dashboard.RolloutView) bool { return v.InProgress && v.Rollout.Driver == "gone" })

	// The history marks the candidate.
	var hist struct {
		History []dashboard.HistoryEntry `json:"history"`
	}
	e.api("/api/root/history?root=/config", &hist)
	if len(hist.History) != 2 || hist.History[0].Generation != cand || hist.History[0].Candidate == nil ||
		*hist.History[0].Candidate != sel1 {
		t.Fatalf("history during the rollout = %+v", hist.History)
	}

	// Widen: both selected, both apply; the first step stays with its
	// agent, the current one has both.
	if _, err := e.pub.Widen(ctx, r.RolloutID, manifest.Selection{Percent: p2}, "wider"); err != nil {
		t.Fatal(err)
	}
	v = e.waitRollout("both agents applied after the widen", func(v dashboard.RolloutView) bool {
		return v.InProgress && v.Rollout.Counts["applied"] == 2 && len(v.Rollout.Events) == 2
	})
	r = v.Rollout
	if eventKinds(r.Events) != "[start widen]" || r.Events[1].Message != "wider" || r.Percent != p2 ||
		len(r.Steps) != 3 || r.Steps[0].Current || r.Steps[0].Percent != p1 || r.Steps[0].Applied != 1 ||
		!r.Steps[1].Current || r.Steps[1].Agents != 2 || r.Steps[1].Applied != 2 || !r.Steps[2].Planned ||
		r.Outside.Agents != 0 {
		t.Fatalf("after the widen: %+v", r)
	}
	page = e.rolloutAgents("/api/root/agents?root=/config&rollout=applied")
	if page.Total != 2 {
		t.Fatalf("rollout=applied after the widen: %s", page.rows())
	}

	// Promote: no rollout in progress, the record's events end with the
	// promote, the history marks it.
	pres, err := e.pub.Promote(ctx, r.RolloutID, publish.Request{Message: "looks good"})
	if err != nil {
		t.Fatal(err)
	}
	v = e.waitRollout("the promote", func(v dashboard.RolloutView) bool {
		return !v.InProgress && v.Last != nil && len(v.Last.Events) == 3
	})
	if v.Rollout != nil || v.Generation != pres.Generation || eventKinds(v.Last.Events) != "[start widen promote]" ||
		v.Last.Events[2].Generation != pres.Generation || v.Last.Events[2].Message != "looks good" {
		t.Fatalf("after the promote: %+v", v)
	}
	e.waitFleet("both agents at the promoted generation", allAt(pres.Generation))
	page = e.rolloutAgents("/api/root/agents?root=/config")
	for _, a := range page.Agents {
		if a.RolloutState != "" || a.Selected {
			t.Fatalf("rollout state without a rollout: %s", page.rows())
		}
	}
	e.api("/api/root/history?root=/config", &hist)
	if len(hist.History) != 3 || hist.History[0].PromoteOf != cand || hist.History[1].Candidate == nil {
		t.Fatalf("history after the promote = %+v", hist.History)
	}

	// A canary host-b's check refuses: host-b failing, host-a stable;
	// then an abort.
	sel2 := manifest.Selection{Selector: "zone=b"}
	res, err = e.pub.Publish(ctx, publish.Request{Canary: &sel2,
		Items: map[string][]byte{"app.conf": []byte("a=1\nbad\n"), "settings.json": []byte(`{"size": 1}`)}})
	if err != nil {
		t.Fatal(err)
	}
	v = e.waitRollout("host-b failing on the candidate", func(v dashboard.RolloutView) bool {
		return v.InProgress && v.Rollout.Candidate == res.Generation && v.Rollout.Counts["failing"] == 1
	})
	r = v.Rollout
	if r.Selector != "zone=b" || r.Driver != "none" || len(r.Steps) != 1 || r.Steps[0].Failing != 1 || r.Steps[0].Agents != 1 ||
		r.Outside != (rollout.OutsideProgress{Agents: 1, Stable: 1}) || eventKinds(r.Events) != "[start]" {
		t.Fatalf("failing canary: %+v", r)
	}
	page = e.rolloutAgents("/api/root/agents?root=/config&rollout=failing")
	if page.rows() != fmt.Sprint([]string{fmt.Sprintf("host-b:%d:failing:true", pres.Generation)}) {
		t.Fatalf("rollout=failing: %s", page.rows())
	}
	ares, err := e.pub.Abort(ctx, r.RolloutID, publish.Request{Message: "bad"})
	if err != nil {
		t.Fatal(err)
	}
	v = e.waitRollout("the abort", func(v dashboard.RolloutView) bool {
		return !v.InProgress && v.Last != nil && v.Last.RolloutID == r.RolloutID && len(v.Last.Events) == 2
	})
	if eventKinds(v.Last.Events) != "[start abort]" || v.Last.Events[1].Generation != ares.Generation {
		t.Fatalf("after the abort: %+v", v.Last)
	}
	e.api("/api/root/history?root=/config", &hist)
	if !slices.ContainsFunc(hist.History, func(h dashboard.HistoryEntry) bool { return h.AbortOf == res.Generation }) {
		t.Fatalf("history after the abort = %+v", hist.History)
	}
}
