package cache

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/faultproxy"
	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/zkclient"
)

// TestChangeWhileCutOff: the cache's connection is cut and held (the
// client cannot reconnect) while a change is published; once the network
// is back the client reconnects within its session and the cache picks the
// change up by its post-reconnect resync.
func TestChangeWhileCutOff(t *testing.T) {
	zkc := zktest.StartWith(t, zktest.Options{Size: 1, MaxSessionTimeout: 30 * time.Second})
	pub := newRawPublisher(t, zkc.Connect(t, 4*time.Second), "/config")
	proxy := faultproxy.Start(t, zkc.Addrs()[0])
	log, _ := testLogger(t)

	v1 := set(4, "v1")
	pub.publish(v1)
	c := newCache(t, "/config", WithServers([]string{proxy.Addr()}, 20*time.Second), WithLogger(log),
		WithResyncJitter(300*time.Millisecond))
	waitGen(t, c, 1, v1)
	waitState(t, c, "live", isLive)

	proxy.Blackhole(true)
	proxy.Cut()
	waitState(t, c, "stale after the cut", func(st StateInfo) bool {
		return st.State == StateStale && errors.Is(st.Err, ErrDisconnected)
	})
	v2 := withItem(v1, "item02", "changed while cut off")
	g2, _ := pub.publish(v2)
	if s := c.Snapshot(); s.Generation() != 1 {
		t.Fatalf("cut-off cache saw generation %d", s.Generation())
	}
	proxy.Blackhole(false)

	waitGen(t, c, g2, v2)
	waitState(t, c, "live again", isLive)
	st := c.Stats()
	if st.Reconnects < 1 || st.Resyncs < 1 || st.Expiries != 0 {
		t.Fatalf("stats after a cut: %+v", st)
	}
	t.Logf("reconnects %d, resyncs %d, syncs %d", st.Reconnects, st.Resyncs, st.Syncs)
}

// TestChangeAcrossSessionExpiry: the network is blackholed longer than the
// session timeout, so the server expires the cache's session; a change is
// published meanwhile. The cache reports Expired, then resyncs on the new
// session and picks the change up. Run with the cache's own connection and
// with the application's (which the cache must not close or replace), on
// one server (its own: a fault proxy in front of it), each on its root.
func TestChangeAcrossSessionExpiry(t *testing.T) {
	zkc := zktest.Start(t)
	for _, own := range []bool{true, false} {
		name := "app-conn"
		if own {
			name = "own-conn"
		}
		t.Run(name, func(t *testing.T) {
			root := "/config-" + name
			direct := zkc.Connect(t, 4*time.Second)
			pub := newRawPublisher(t, direct, root)
			proxy := faultproxy.Start(t, zkc.Addrs()[0])
			log, _ := testLogger(t)

			v1 := set(4, "v1")
			pub.publish(v1)
			opts := []Option{WithLogger(log)}
			var appConn *zk.Conn
			if own {
				opts = append(opts, WithServers([]string{proxy.Addr()}, time.Second))
			} else {
				conn, sess, err := zkclient.DialConn(zkclient.Config{Servers: []string{proxy.Addr()}, SessionTimeout: time.Second})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(conn.Close)
				appConn = conn
				opts = append(opts, WithClient(zkclient.Fixed(conn, sess)))
			}
			c := newCache(t, root, opts...)
			waitGen(t, c, 1, v1)
			waitState(t, c, "live", isLive)

			// An ephemeral node of the cache's session tells the test,
			// through a watch, when the server has expired the session.
			probe := "/probe-" + name
			if _, err := c.conn.Create(probe, nil, zk.FlagEphemeral, acl); err != nil {
				t.Fatal(err)
			}
			ok, _, gone, err := direct.ExistsW(probe)
			if err != nil || !ok {
				t.Fatalf("probe: %v %v", ok, err)
			}

			proxy.Blackhole(true)
			v2 := withItem(withItem(v1, "item01", "after expiry"), "new", "item")
			g2, _ := pub.publish(v2)
			select {
			case ev := <-gone:
				if ev.Type != zk.EventNodeDeleted {
					t.Fatalf("probe event %v", ev)
				}
			case <-testCtx(t).Done():
				t.Fatal("the server did not expire the session")
			}
			if s := c.Snapshot(); s.Generation() != 1 {
				t.Fatalf("blackholed cache saw generation %d", s.Generation())
			}
			proxy.Blackhole(false)

			waitState(t, c, "expiry reported", func(st StateInfo) bool { return st.Expiries >= 1 })
			waitGen(t, c, g2, v2)
			st := waitState(t, c, "live on the new session", isLive)
			stats := c.Stats()
			if stats.Expiries < 1 || st.Expiries < 1 {
				t.Fatalf("expiry not counted: stats %+v, state %+v", stats, st)
			}
			if !own {
				// The application's connection carries on, on its new session.
				if _, _, err := appConn.Get(root); err != nil {
					t.Fatalf("application connection after expiry: %v", err)
				}
			}
			t.Logf("expiries %d, reconnects %d, resyncs %d, syncs %d", stats.Expiries, stats.Reconnects, stats.Resyncs, stats.Syncs)
		})
	}
}

// TestLeaderKilled: the cache is connected to the ensemble's leader (through
// a proxy, so the test knows where it is connected), the leader is killed,
// the client reconnects to a follower within its session, and a change
// published through the new leader reaches the cache. The session is long
// (20s): a leader election on a loaded machine must not outlast it.
func TestLeaderKilled(t *testing.T) {
	zkc := zktest.StartWith(t, zktest.Options{Size: 3, MaxSessionTimeout: 30 * time.Second})
	leader := zkc.Leader()
	follower := (leader + 1) % 3
	direct := zkc.Connect(t, 4*time.Second, zkc.Addrs()[follower])
	pub := newRawPublisher(t, direct, "/config")
	proxy := faultproxy.Start(t, zkc.Addrs()[leader])
	log, _ := testLogger(t)

	v1 := set(6, "v1")
	pub.publish(v1)
	c := newCache(t, "/config", WithServers([]string{proxy.Addr()}, 20*time.Second), WithLogger(log))
	waitGen(t, c, 1, v1)
	waitState(t, c, "live", isLive)

	proxy.SetTarget(zkc.Addrs()[follower])
	zkc.Kill(leader)
	if nl := zkc.Leader(); nl == leader {
		t.Fatalf("leader still %d", leader)
	}
	v2 := withItem(v1, "item05", "after the leader died")
	ctx := testCtx(t)
	var g2 int64
	for {
		// The publisher's connection may need a reconnect first. A multi
		// that failed with a connection error may still have landed: look
		// before retrying (the CAS would refuse a double apply anyway).
		g, _, err := pub.tryPublish(v2)
		if err == nil {
			g2 = g
			break
		}
		if m, _, err2 := pub.current(); err2 == nil && m.Generation == 2 {
			g2 = 2
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("publish after leader kill: %v", err)
		case <-time.After(100 * time.Millisecond): // retry pacing, not synchronisation
		}
	}
	waitGen(t, c, g2, v2)
	waitState(t, c, "live", isLive)
	st := c.Stats()
	if st.Reconnects < 1 || st.Expiries != 0 {
		t.Fatalf("stats after the leader was killed: %+v", st)
	}
	t.Logf("reconnects %d, resyncs %d, syncs %d, errors %d", st.Reconnects, st.Resyncs, st.Syncs, st.Errors)
}
