package publish

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/manifest"
)

// verifiedAgentRead reads the root the way a verifying agent does and
// reports whether every item matched the manifest.
func verifiedAgentRead(t *testing.T, conn *zk.Conn, root string) (*manifest.Manifest, bool) {
	t.Helper()
	data, _, err := conn.Get(root)
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range m.Names() {
		b, _, err := conn.Get(root + "/" + n)
		if errors.Is(err, zk.ErrNoNode) || (err == nil && !m.Matches(n, b)) {
			return m, false
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return m, true
}

// TestMarkerMode covers marker-mode publishing of a 5 MiB set, a publisher
// killed halfway, a live marker, and its override.
func TestMarkerMode(t *testing.T) {
	t.Parallel()
	c := startOwnZK(t)

	t.Run("FiveMiBSetAndKilledHalfway", func(t *testing.T) {
		root := "/marker/big"
		p := newPub(t, c, root)
		big := items(10, 512<<10, "gen1") // 5 MiB
		start := time.Now()
		res := mustPublish(t, p, Request{Items: big})
		if res.Mode != "marker" || res.Generation != 1 {
			t.Fatalf("5 MiB publish: %+v", res)
		}
		t.Logf("5 MiB marker-mode publish: %v", time.Since(start))
		checkLive(t, p, 1, big)

		// A second publisher dies after writing 3 of the 10 changed items.
		killedConn, killedSess := dial(t, testSession, c.Addrs()...)
		killed := mustNew(t, killedConn, killedSess, root, WithPublisherName("doomed@test"),
			withMarkerWrite(func(n int) error {
				if n == 3 {
					killedConn.Close() // the process is gone: its session and liveness node go
					return errSimulatedCrash
				}
				return nil
			}))
		_, err := killed.Publish(testCtx(t), Request{Items: items(10, 512<<10, "gen2")})
		if !errors.Is(err, errSimulatedCrash) {
			t.Fatalf("simulated crash: %v", err)
		}

		observer := c.Connect(t, testSession)
		if ok, _, _ := observer.Exists(p.paths.Marker()); !ok {
			t.Fatal("the dead publish's marker is gone")
		}
		if kids, _, _ := observer.Children(p.paths.Publishing()); len(kids) != 0 {
			t.Fatalf("liveness node of the dead publish still there: %v", kids)
		}
		// The old manifest is still live; a verifying reader does not
		// accept the half-written items (it waits)...
		m, ok := verifiedAgentRead(t, observer, root)
		if m.Generation != 1 {
			t.Fatalf("live generation %d after a dead publish, want 1", m.Generation)
		}
		if ok {
			t.Fatal("the half-written set verified against the old manifest")
		}
		// ...and Publisher.Read still returns the old generation.
		reader := newPub(t, c, root)
		rm, got, err := reader.Read(testCtx(t), 0)
		if err != nil || rm.Generation != 1 || !sameItems(got, big) {
			t.Fatalf("reader during a dead marker: gen %v err %v", rm, err)
		}

		// The next publish takes the dead marker over and completes.
		final := items(10, 512<<10, "gen3")
		delete(final, "item-09.conf")
		final["extra.conf"] = []byte("extra\n")
		res = mustPublish(t, reader, Request{Items: final})
		if res.Generation != 2 || res.Mode != "marker" {
			t.Fatalf("takeover publish: %+v", res)
		}
		checkLive(t, reader, 2, final)
		if _, ok := verifiedAgentRead(t, observer, root); !ok {
			t.Fatal("the completed set does not verify")
		}
	})

	t.Run("TakeoverInMultiMode", func(t *testing.T) {
		root := "/marker/small"
		p := newPub(t, c, root)
		base := items(4, 100, "a")
		mustPublish(t, p, Request{Items: base})
		killedConn, killedSess := dial(t, testSession, c.Addrs()...)
		killed := mustNew(t, killedConn, killedSess, root, withMarkerWrite(func(n int) error {
			if n == 2 {
				killedConn.Close()
				return errSimulatedCrash
			}
			return nil
		}))
		half := items(4, 100, "b")
		half["added.conf"] = []byte("x")
		if _, err := killed.Publish(testCtx(t), Request{Items: half, Mode: manifest.ModeMarker}); !errors.Is(err, errSimulatedCrash) {
			t.Fatal(err)
		}
		// Republishing the live content is not "unchanged": the children
		// are half-written and the marker must go.
		res := mustPublish(t, p, Request{Items: base})
		if res.Unchanged || res.Mode != "multi" || res.Generation != 2 {
			t.Fatalf("takeover: %+v", res)
		}
		checkLive(t, p, 2, base)
	})

	t.Run("LiveMarkerRefusedThenOverridden", func(t *testing.T) {
		root := "/marker/live"
		p := newPub(t, c, root)
		mustPublish(t, p, Request{Items: items(4, 100, "a")})

		reached := make(chan struct{})
		release := make(chan struct{})
		slowConn, slowSess := dial(t, testSession, c.Addrs()...)
		slow := mustNew(t, slowConn, slowSess, root, WithPublisherName("slow@host"),
			withMarkerWrite(func(n int) error {
				if n == 2 {
					close(reached)
					<-release
				}
				return nil
			}))
		slowDone := make(chan error, 1)
		var slowID string
		go func() {
			_, err := slow.Publish(testCtx(t), Request{Items: items(4, 100, "slow"), Mode: manifest.ModeMarker})
			slowDone <- err
		}()
		await(t, reached, "the slow publish to hold the marker")
		data, _, err := p.conn().Get(p.paths.Marker())
		if err != nil {
			t.Fatal(err)
		}
		slowID = strings.Split(strings.Split(string(data), `"publish_id":"`)[1], `"`)[0]

		before := treeSnapshot(t, p.conn(), root)
		_, err = p.Publish(testCtx(t), Request{Items: items(4, 100, "other")})
		var mb *MarkerBusyError
		if !errors.Is(err, ErrMarkerBusy) || !errors.As(err, &mb) {
			t.Fatalf("want MarkerBusyError, got %v", err)
		}
		if mb.Owner != "slow@host" || mb.PublishID != slowID || mb.Age < 0 || mb.Age > time.Minute {
			t.Fatalf("marker busy: %+v", mb)
		}
		if !strings.Contains(err.Error(), "slow@host") || !strings.Contains(err.Error(), "override") {
			t.Fatalf("message should name the owner and the override: %v", err)
		}
		if !equalSnap(before, treeSnapshot(t, p.conn(), root)) {
			t.Fatal("a refused publish wrote")
		}
		// A dry run is refused the same way.
		if _, err := p.Publish(testCtx(t), Request{Items: items(4, 100, "other"), DryRun: true}); !errors.Is(err, ErrMarkerBusy) {
			t.Fatalf("dry run with a live marker: %v", err)
		}

		// Explicit override: it wins, and the slow publish's remaining
		// writes are fenced off by the marker.
		winner := items(3, 100, "winner")
		res := mustPublish(t, p, Request{Items: winner, OverrideMarker: true})
		if res.Generation != 2 {
			t.Fatalf("override publish: %+v", res)
		}
		close(release)
		err = <-slowDone
		var ce *ConflictError
		if !errors.As(err, &ce) || ce.Actual != 2 || !strings.Contains(err.Error(), "marker") {
			t.Fatalf("the overridden publish should stop with a conflict on the marker, got %v", err)
		}
		checkLive(t, p, 2, winner)
	})

	t.Run("MarkerFencesAMultiPublishThatReadBefore", func(t *testing.T) {
		// A multi-mode publish reads the root, then a marker-mode publish
		// sets its marker and starts writing items, then the multi-mode
		// publish sends its commit. Setting the marker must have moved the
		// root's version, so that commit fails instead of landing in the
		// middle of the marker publish (whose item writes would then tear
		// the set it committed).
		root := "/marker/fence-multi"
		p := newPub(t, c, root)
		mustPublish(t, p, Request{Items: items(4, 100, "a")})
		reached := make(chan struct{})
		release := make(chan struct{})
		markerSet := items(4, 100, "marker")
		mConn, mSess := dial(t, testSession, c.Addrs()...)
		mp := mustNew(t, mConn, mSess, root, withMarkerWrite(func(n int) error {
			if n == 1 {
				close(reached)
				<-release
			}
			return nil
		}))
		markerDone := make(chan error, 1)
		var once sync.Once
		multi := newPub(t, c, root, withBeforeCommit(func(stage string) {
			once.Do(func() {
				go func() {
					_, err := mp.Publish(testCtx(t), Request{Items: markerSet, Mode: manifest.ModeMarker})
					markerDone <- err
				}()
				<-reached
			})
		}))
		_, err := multi.Publish(testCtx(t), Request{Items: items(4, 100, "multi")})
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("a multi-mode commit based on the root before the marker: %v", err)
		}
		close(release)
		if err := <-markerDone; err != nil {
			t.Fatalf("marker publish: %v", err)
		}
		checkLive(t, p, 2, markerSet)
	})

	t.Run("OverrideInMarkerModeFencesTheOther", func(t *testing.T) {
		root := "/marker/fence"
		p := newPub(t, c, root)
		mustPublish(t, p, Request{Items: items(4, 100, "a")})
		reached := make(chan struct{})
		release := make(chan struct{})
		slowConn, slowSess := dial(t, testSession, c.Addrs()...)
		slow := mustNew(t, slowConn, slowSess, root, withMarkerWrite(func(n int) error {
			if n == 1 {
				close(reached)
				<-release
			}
			return nil
		}))
		slowDone := make(chan error, 1)
		go func() {
			_, err := slow.Publish(testCtx(t), Request{Items: items(4, 100, "slow"), Mode: manifest.ModeMarker})
			slowDone <- err
		}()
		await(t, reached, "the slow publish to hold the marker")
		winner := items(5, 100, "winner")
		res := mustPublish(t, p, Request{Items: winner, OverrideMarker: true, Mode: manifest.ModeMarker})
		if res.Generation != 2 || res.Mode != "marker" {
			t.Fatalf("override: %+v", res)
		}
		close(release)
		if err := <-slowDone; !errors.Is(err, ErrConflict) {
			t.Fatalf("fenced publish: %v", err)
		}
		checkLive(t, p, 2, winner)
	})
}

// TestForeignMarkerTakenOver: a marker whose data confpush did not write
// (made by hand) names no publish, so it is dead: InspectMarker reports it
// foreign, a dry run says it would take it over and leaves it, and the
// next publish takes it over and says so.
func TestForeignMarkerTakenOver(t *testing.T) {
	t.Parallel()
	c := startOwnZK(t)
	const root = "/marker/foreign"
	p := newPub(t, c, root)
	mustPublish(t, p, Request{Items: items(3, 100, "a")})
	if _, err := p.conn().Create(p.paths.Marker(), []byte("made by hand"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	r, err := p.InspectMarker(testCtx(t))
	if err != nil || r == nil || !r.Foreign || r.Live || r.PublishID != "" {
		t.Fatalf("InspectMarker of a hand-made marker: %+v %v", r, err)
	}
	next := items(3, 100, "b")
	dry, err := p.Publish(testCtx(t), Request{Items: next, DryRun: true})
	if err != nil || !strings.HasPrefix(dry.TookOver, "would take over an abandoned marker") || !strings.Contains(dry.TookOver, "not written by confpush") {
		t.Fatalf("dry run over a hand-made marker: %+v %v", dry, err)
	}
	if ok, _, _ := p.conn().Exists(p.paths.Marker()); !ok {
		t.Fatal("the dry run removed the marker")
	}
	res := mustPublish(t, p, Request{Items: next})
	if res.Generation != 2 || !strings.HasPrefix(res.TookOver, "took over an abandoned marker") || !strings.Contains(res.TookOver, "not written by confpush") {
		t.Fatalf("publish over a hand-made marker: %+v", res)
	}
	if ok, _, _ := p.conn().Exists(p.paths.Marker()); ok {
		t.Fatal("the marker is still there after the takeover")
	}
	checkLive(t, p, 2, next)
}
