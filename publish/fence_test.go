package publish

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zkconf/zkconf/manifest"
)

// TestFence checks Request.Fence: a publish is applied only while the
// fence node exists, in multi and in marker mode, including when the fence
// goes between the publish's reads and its commit.
func TestFence(t *testing.T) {
	c := startZK(t)
	leader := c.Connect(t, testSession)
	acl := zk.WorldACL(zk.PermAll)
	newFence := func(path string) {
		t.Helper()
		if _, err := leader.Create(path, nil, zk.FlagEphemeral, acl); err != nil {
			t.Fatal(err)
		}
	}
	dropFence := func(path string) {
		if err := leader.Delete(path, -1); err != nil {
			t.Error(err)
		}
	}

	for _, mode := range []manifest.Mode{manifest.ModeMulti, manifest.ModeMarker} {
		t.Run(mode.String(), func(t *testing.T) {
			root := "/fenced-" + mode.String()
			fence := "/fence-" + mode.String()
			newFence(fence)
			var dropAt atomic.Value // stage at which the fence is dropped
			dropAt.Store("")
			p := newPub(t, c, root, withBeforeCommit(func(stage string) {
				if dropAt.Load() == stage {
					dropAt.Store("")
					dropFence(fence)
				}
			}))
			if r := mustPublish(t, p, Request{Items: items(3, 10, "a"), Mode: mode, Fence: fence}); r.Generation != 1 {
				t.Fatalf("fenced publish: %+v", r)
			}
			snap := treeSnapshot(t, p.conn(), root)

			// The fence goes after the publish read the root, right before
			// its commit (multi) or its marker (marker mode).
			stage := "multi"
			if mode == manifest.ModeMarker {
				stage = "marker"
			}
			dropAt.Store(stage)
			_, err := p.Publish(testCtx(t), Request{Items: items(3, 10, "b"), Mode: mode, Fence: fence})
			if !errors.Is(err, ErrFenced) {
				t.Fatalf("commit without its fence: %v", err)
			}
			if !equalSnap(snap, treeSnapshot(t, p.conn(), root)) {
				t.Fatal("a fenced-off publish wrote to the root")
			}
			// With the fence already gone nothing is attempted.
			if _, err := p.Publish(testCtx(t), Request{Items: items(3, 10, "c"), Mode: mode, Fence: fence, DryRun: true}); !errors.Is(err, ErrFenced) {
				t.Fatalf("dry run without the fence: %v", err)
			}
			checkLive(t, p, 1, items(3, 10, "a"))
		})
	}

	t.Run("MarkerItemWrites", func(t *testing.T) {
		root, fence := "/fenced-items", "/fence-items"
		newFence(fence)
		p := newPub(t, c, root, withMarkerWrite(func(n int) error {
			if n == 1 {
				dropFence(fence)
			}
			return nil
		}))
		mustPublish(t, newPub(t, c, root), Request{Items: items(4, 10, "a")})
		_, err := p.Publish(testCtx(t), Request{Items: items(4, 10, "b"), Mode: manifest.ModeMarker, Fence: fence})
		if !errors.Is(err, ErrFenced) {
			t.Fatalf("item writes without the fence: %v", err)
		}
		// Exactly one item write got through; the marker stays, and the
		// old generation is still the live one.
		if ok, _, _ := p.conn().Exists(p.paths.Marker()); !ok {
			t.Fatal("marker gone")
		}
		m, _, err := p.Current(testCtx(t))
		if err != nil || m.Generation != 1 {
			t.Fatalf("live: %v %v", m, err)
		}
	})
}
