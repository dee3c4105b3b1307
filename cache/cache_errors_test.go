package cache

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zkconf/zkconf/manifest"
)

// TestCacheErrorMessages pins the messages docs/errors.md lists for a wrong
// root, foreign data in the root and a manifest from a future format: the
// cache reports each in its state and keeps serving what it held (nothing
// changes: no snapshot appears from bad data, a held one is kept).
func TestCacheErrorMessages(t *testing.T) {
	zkc := sharedZooKeeper.For(t)
	conn := zkc.Connect(t, 4*time.Second)
	log, _ := testLogger(t)
	c := newCache(t, "/errs", WithServers(zkc.Addrs(), 4*time.Second), WithLogger(log))
	check := func(t *testing.T, st StateInfo, want error, msg string) {
		t.Helper()
		if !errors.Is(st.Err, want) || !strings.Contains(st.Err.Error(), msg) {
			t.Fatalf("state error %v, want %v containing %q", st.Err, want, msg)
		}
	}

	t.Run("RootMissing", func(t *testing.T) {
		st := waitState(t, c, "root missing", func(st StateInfo) bool { return errors.Is(st.Err, ErrRootMissing) })
		check(t, st, ErrRootMissing, "cache: config root does not exist")
		if st.State != StateStarting || c.Snapshot() != nil {
			t.Fatalf("state %v, snapshot %v; want starting and none", st.State, c.Snapshot())
		}
	})
	t.Run("RootNeverPublished", func(t *testing.T) {
		if _, err := conn.Create("/errs", nil, 0, acl); err != nil {
			t.Fatal(err)
		}
		st := waitState(t, c, "not published", func(st StateInfo) bool { return errors.Is(st.Err, ErrNotPublished) })
		check(t, st, ErrNotPublished, "cache: config root has never been published")
		if c.Snapshot() != nil {
			t.Fatal("a snapshot from an unpublished root")
		}
	})

	pub := newRawPublisher(t, conn, "/errs")
	v1 := set(2, "a")
	g1, _ := pub.publish(v1)
	waitGen(t, c, g1, v1)

	t.Run("ForeignDataInRoot", func(t *testing.T) {
		if _, err := conn.Set("/errs", []byte(`{"hello":"world"}`), -1); err != nil {
			t.Fatal(err)
		}
		st := waitState(t, c, "foreign", func(st StateInfo) bool { return errors.Is(st.Err, manifest.ErrForeign) })
		check(t, st, manifest.ErrForeign, "root data is not a zkconf manifest")
		if st.State != StateStale || c.Snapshot().Generation() != g1 {
			t.Fatalf("state %v, generation %d; want stale, %d kept", st.State, c.Snapshot().Generation(), g1)
		}
		checkItems(t, c.Snapshot(), v1)
	})
	t.Run("FutureFormatManifest", func(t *testing.T) {
		if _, err := conn.Set("/errs", []byte(`{"format":99,"generation":5}`), -1); err != nil {
			t.Fatal(err)
		}
		st := waitState(t, c, "future format", func(st StateInfo) bool { return errors.Is(st.Err, manifest.ErrFutureFormat) })
		check(t, st, manifest.ErrFutureFormat, "manifest format is newer than this zkconf understands")
		if st.State != StateStale || c.Snapshot().Generation() != g1 {
			t.Fatalf("state %v, generation %d; want stale, %d kept", st.State, c.Snapshot().Generation(), g1)
		}
		checkItems(t, c.Snapshot(), v1)
	})
}

// TestCacheStateFileErrorMessages pins the reason a corrupt state file is
// refused (the cache then ignores it: TestCorruptStateFileIgnored).
func TestCacheStateFileErrorMessages(t *testing.T) {
	items := map[string][]byte{"a": []byte("alpha")}
	good, h := encodedState(t, items)
	h.Format = stateFormat + 1
	future, _ := json.Marshal(h)
	for _, tc := range []struct {
		name, root string
		data       []byte
		want       string
	}{
		{"BitFlip", "/r", bytes.Replace(good, []byte(`"generation":2`), []byte(`"generation":3`), 1), "unusable state file: checksum mismatch (file corrupted)"},
		{"OtherRoot", "/other", good, `unusable state file: it holds root "/r", not "/other"`},
		{"FutureFormat", "/r", future, "unusable state file: format 5, this zkconf reads 4"},
		{"NotJSON", "/r", []byte("{"), "unusable state file: not JSON"},
		{"WrongKind", "/r", []byte(`{"kind":"x","format":1}`), `unusable state file: kind "x" is not`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := decodeState(tc.root, tc.data)
			if s != nil || !errors.Is(err, errStateFile) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("decodeState: %v %v, want %q", s, err, tc.want)
			}
		})
	}
}

// TestCacheNewErrorMessages pins New's refusals of bad options.
func TestCacheNewErrorMessages(t *testing.T) {
	srv := WithServers([]string{"127.0.0.1:1"}, time.Second)
	for _, tc := range []struct {
		name string
		root string
		opts []Option
		want string
	}{
		{"RelativeRoot", "config", []Option{srv}, `cache: root "config" must be an absolute ZooKeeper path`},
		{"NoServers", "/config", nil, "cache: no ZooKeeper given (WithServers, WithConfig or WithClient)"},
		{"TwoSources", "/config", []Option{srv, WithServers([]string{"127.0.0.1:2"}, time.Second)}, "cache: give exactly one of WithServers, WithConfig or WithClient"},
		{"FetchConcurrency", "/config", []Option{srv, WithFetchConcurrency(0)}, "cache: fetch concurrency 0 is not positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(testCtx(t), tc.root, tc.opts...)
			if err == nil {
				c.Close()
				t.Fatal("New succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want %q", err, tc.want)
			}
			t.Logf("%v", err)
		})
	}
}
