package chaos

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Summary is a run's outcome.
type Summary struct {
	Seed                 uint64
	Duration, FaultPhase time.Duration
	Elapsed              time.Duration
	Agents, Servers      int

	Faults    map[string]int
	Publishes publishStats

	Reads           int64 // output reads by the checker
	StatesChecked   int   // distinct output states verified
	Raced           int64 // reads discarded because a swap happened during them
	LinkReads       int64 // top-level DEST/name links read
	LinkPairs       int   // distinct (link, content) pairs verified
	TreeStates      int   // distinct dir target states verified that held a sub-directory
	TreeLinkPaths   int   // distinct paths below a top-level directory read through its link
	HistoryVerified int   // history entries read and verified

	FinalGeneration       int64
	Bound                 time.Duration
	BoundExpr             string
	Convergence           map[int]time.Duration
	WorstConvergence      time.Duration
	WorstConvergenceAgent int
	Recoveries            int
	RecoverySkipped       int
	WorstRecovery         time.Duration
	WorstRecoveryAgent    int
	WorstRecoveryWhat     string

	ConfigRejections int
	AgentStarts      int

	// Trust and recovery: healed reload failures whose retry was checked, readings
	// of the fleet view and of squatted status nodes while forged nodes
	// existed, and the incarnations the run went through.
	ReloadRetries int
	FleetReadings int
	SquatReadings int

	// Hostile agent identity: steps checked (others skipped, e.g. by an
	// ensemble wipe), burst writes past the bounds (refused but the
	// overshoot of empty foreign status nodes), writes within its quota,
	// and fleet view readings while it ran.
	HostileSteps, HostileSkipped int
	HostileBurst, HostileRefused int
	HostileOvershoot             int
	HostileFlood                 int
	HostileReadings              int
	Incarnations                 int

	// Canary rollouts: the workload's rollout steps, the agents whose
	// final state was checked against what their labels select, and
	// whether the run ended on an open rollout (the closing canary).
	Rollouts        rolloutStats
	Trees           treeSummary
	Roots           rootsSummary
	FinalSelections int
	ClosingCanary   bool
	Relabelled      []string

	Violations  []Violation
	WorkDir     string
	HistoryFile string
}

// treeSummary is what the workload did with config trees.
type treeSummary struct {
	treeStats
	Attempted, Acked        int // publish attempts whose set had a '/' path
	AckedMulti, AckedMarker int
	MaxDepth                int // the most components of a path sent
	HistoryTrees            int // format-2 generations in the history (every incarnation)
}

// treeSummary counts the records whose set was a tree.
func (w *workload) treeSummary(records []*pubRecord) treeSummary {
	w.mu.Lock()
	t := treeSummary{treeStats: w.trees}
	w.mu.Unlock()
	for _, r := range records {
		if formatFor(r.Items) != 2 {
			continue
		}
		t.Attempted++
		for n := range r.Items {
			t.MaxDepth = max(t.MaxDepth, strings.Count(n, "/")+1)
		}
		if r.Outcome == outAcked {
			t.Acked++
			switch r.ResMode {
			case "multi":
				t.AckedMulti++
			case "marker":
				t.AckedMarker++
			}
		}
	}
	return t
}

// Failed reports whether any property was broken.
func (s *Summary) Failed() bool { return len(s.Violations) > 0 }

// Text is the summary as printed and written to the summary file.
func (s *Summary) Text() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("zkconf chaos summary")
	p("  seed:                 %d   (replay: make chaos CHAOS_SEED=%d CHAOS_DURATION=%v)", s.Seed, s.Seed, s.Duration)
	p("  duration:             %v of faults, %v in all; %d ZooKeeper servers, %d confagent processes", s.FaultPhase, s.Elapsed.Round(time.Second), s.Servers, s.Agents)
	total := 0
	var fk []string
	for _, k := range FaultKinds {
		total += s.Faults[k]
		fk = append(fk, fmt.Sprintf("%s %d", k, s.Faults[k]))
	}
	p("  faults injected:      %d: %s", total, strings.Join(fk, ", "))
	ps := s.Publishes
	p("  publishes:            %d attempted, %d acknowledged (%d marker-mode, %d too big for one transaction, %d rejected by one agent's check, %d rollbacks), %d recovered after a lost connection",
		ps.Attempted, ps.Acked, ps.Marker, ps.Big, ps.Poison, ps.Rollback, ps.Recovered)
	p("                        %d reported failed (none may have landed), %d outcome unknown (resolved from history: %d landed, %d did not)",
		ps.Failed, ps.Unknown, ps.UnknownLanded, ps.UnknownNotLanded)
	p("  history:              %d generations read back and verified item for item; final generation %d", s.HistoryVerified, s.FinalGeneration)
	p("  observations checked: %d reads of agent outputs, %d distinct output states verified, %d top-level link reads (%d distinct contents), %d reads discarded (swap during the read)",
		s.Reads, s.StatesChecked, s.LinkReads, s.LinkPairs, s.Raced)
	p("  agent restarts:       %d process starts; %d invalid configurations rejected", s.AgentStarts, s.ConfigRejections)
	p("  recovery checks:      %d healed reload failures checked for their retry; %d fleet-view and %d squatted-node readings with forged status nodes; %d incarnation(s) of the tree",
		s.ReloadRetries, s.FleetReadings, s.SquatReadings, s.Incarnations)
	p("  hostile identity:     %d step(s) checked (%d skipped); %d writes past the bounds sent, %d refused, %d empty foreign status node(s) landed as a burst's overshoot (removed by acl --repair); %d writes within its quota; %d fleet-view readings",
		s.HostileSteps, s.HostileSkipped, s.HostileBurst, s.HostileRefused, s.HostileOvershoot, s.HostileFlood, s.HostileReadings)
	ro := s.Rollouts
	p("  canary rollouts:      %d started (%d superseding a rollout), %d widened, %d promoted, %d aborted, %d superseded by a plain publish; %d plain publishes during a rollout refused (%d failed otherwise); %d steps failed",
		ro.Started, ro.SupersededByCanary, ro.Widened, ro.Promoted, ro.Aborted, ro.SupersededByPublish, ro.RefusedPublishes, ro.RefusedOther, ro.StepErrors)
	p("                        %d agents' final states checked against their labels' selection (ended on an open rollout: %v; restarted with the other zone mid-rollout: %v)",
		s.FinalSelections, s.ClosingCanary, s.Relabelled)
	t := s.Trees
	p("  config trees:         %d publishes sent a tree (format 2; %d acknowledged: %d multi, %d marker mode), paths up to %d components; %d item moves between directories, %d directories emptied, %d returns to a flat set",
		t.Attempted, t.Acked, t.AckedMulti, t.AckedMarker, t.MaxDepth, t.Moves, t.DirsRemoved, t.Flattened)
	p("                        %d generations in the history are trees; %d distinct dir target states verified were trees; %d paths below a top-level directory read through its link",
		t.HistoryTrees, s.TreeStates, s.TreeLinkPaths)
	rs := s.Roots
	p("  two roots:            %d of %d agents follow %s beside %s (a dir target of it, a template over both); %d publishes to %s attempted, %d acknowledged, %d reported failed, %d outcome unknown (%d landed, %d did not); final generation %d",
		rs.Agents, s.Agents, commonRoot, chaosRoot, rs.Attempted, commonRoot, rs.Acked, rs.Failed, rs.Unknown, rs.Landed, rs.NotLanded, rs.FinalGeneration)
	p("                        %d generations of %s verified (%d trees); %d distinct dir target states (%d trees) and %d link contents verified; %d distinct combinations rendered over both roots, each proved live at one moment by commit zxids; %d reads",
		rs.HistoryVerified, commonRoot, rs.HistoryTrees, rs.DirStates, rs.TreeStates, rs.LinkPairs, rs.CutStates, rs.Reads)
	if rs.WorstAgent >= 0 {
		p("                        final convergence on both roots: worst %v (agent-%d)", rs.WorstConvergence.Round(time.Millisecond), rs.WorstAgent)
	}
	p("  convergence bound:    %s", s.BoundExpr)
	if s.WorstConvergenceAgent >= 0 {
		var per []string
		for _, i := range slices.Sorted(maps.Keys(s.Convergence)) {
			per = append(per, fmt.Sprintf("agent-%d %v", i, s.Convergence[i].Round(time.Millisecond)))
		}
		p("  final convergence:    worst %v (agent-%d); %s", s.WorstConvergence.Round(time.Millisecond), s.WorstConvergenceAgent, strings.Join(per, ", "))
	} else {
		p("  final convergence:    none")
	}
	if s.WorstRecoveryAgent >= 0 {
		p("  recoveries checked:   %d after agent faults (worst %v: agent-%d %s); %d not checked (left to the final convergence check, or the picky agent facing a newer rejected generation)",
			s.Recoveries, s.WorstRecovery.Round(time.Millisecond), s.WorstRecoveryAgent, s.WorstRecoveryWhat, s.RecoverySkipped)
	} else {
		p("  recoveries checked:   %d after agent faults; %d not checked (left to the final convergence check, or the picky agent facing a newer rejected generation)", s.Recoveries, s.RecoverySkipped)
	}
	p("  violations:           %d", len(s.Violations))
	byProp := map[string]int{}
	for _, v := range s.Violations {
		byProp[v.Property]++
	}
	for _, k := range slices.Sorted(maps.Keys(byProp)) {
		p("    %-22s %d", k, byProp[k])
	}
	p("  history file:         %s", s.HistoryFile)
	return b.String()
}

// ViolationsText details every violation with the history around it.
func (s *Summary) ViolationsText(max int) string {
	var b strings.Builder
	for i, v := range s.Violations {
		if i == max {
			fmt.Fprintf(&b, "... %d more violations (see the history file)\n", len(s.Violations)-max)
			break
		}
		fmt.Fprintf(&b, "\nVIOLATION %d/%d  %s  %s  (seed %d)\n  %s\n  history around it:\n", i+1, len(s.Violations), v.Property, v.who(), s.Seed,
			strings.ReplaceAll(v.Msg, "\n", "\n  "))
		for _, l := range v.Context {
			fmt.Fprintf(&b, "    %s\n", l)
		}
	}
	return b.String()
}
