package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/manifest"
)

// PublishCost compares a zkconf publish with raw go-zookeeper Multis of
// the same set, every item changed at every publish.
type PublishCost struct {
	Items    int `json:"items"`
	ItemSize int `json:"item_size"`
	// Publish is publish.Publish from the call to the commit's
	// acknowledgement; PublishCall the whole call (the new contents' blobs
	// stored after the acknowledgement, and history GC, included).
	Publish     Dist `json:"publish"`
	PublishCall Dist `json:"publish_call"`
	// Prepare is the call → the commit leaving the client (reads,
	// hashing, planning); Commit the commit's round trip on the wire.
	Prepare Dist `json:"publish_prepare"`
	Commit  Dist `json:"publish_commit"`
	// AfterAck is the acknowledgement → the call's return: storing the new
	// contents' blobs, and GC.
	AfterAck Dist `json:"publish_after_ack"`
	// Raw is one Multi of the same writes: SetData on the root and on
	// every item.
	Raw Dist `json:"raw_multi"`
	// RawTxn is one Multi of the transaction zkconf commits: the same
	// writes with the manifest as the root's data, a Check that the blob of
	// every departing content (the previous generation's, here every item)
	// exists, and a history entry. The blobs of the new contents are
	// stored after it, untimed, as zkconf does after its acknowledgement.
	RawTxn Dist `json:"raw_multi_zkconf_txn"`
	// Ratio is Publish.P50 / Raw.P50.
	Ratio float64 `json:"ratio_p50"`
}

// rawRoot is a root written with raw Multis.
type rawRoot struct {
	path    string
	blobs   string // "" for the plain writes
	history string
}

func (e *env) newRawRoot(conn *zk.Conn, name string, sched *schedule, txn bool) (*rawRoot, error) {
	r := &rawRoot{path: e.root(name)}
	acl := zk.WorldACL(zk.PermAll)
	paths := []string{"/confbench", e.prefix, e.prefix + "/r", r.path}
	if txn {
		r.blobs, r.history = e.prefix+"/"+name+"-blobs", e.prefix+"/"+name+"-history"
		paths = append(paths, r.blobs, r.history)
	}
	for _, p := range paths {
		if _, err := conn.Create(p, nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return nil, fmt.Errorf("create %s: %w", p, err)
		}
	}
	for n, b := range sched.set(1) {
		if _, err := conn.Create(r.path+"/"+n, b, 0, acl); err != nil {
			return nil, fmt.Errorf("create %s: %w", n, err)
		}
		if txn {
			p := r.blobs + "/" + manifest.Hash(b)
			if _, err := conn.Create(p, b, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				return nil, fmt.Errorf("create %s: %w", p, err)
			}
		}
	}
	return r, nil
}

// ops returns the Multi writing generation g (over generation g-1), and
// the untimed Multi that follows it: for the transaction, store the new
// contents' blobs and remove the previous ones and the history entry.
func (r *rawRoot) ops(sched *schedule, g int64) (write, undo []any) {
	items := sched.set(g)
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range items {
			if !yield(n) {
				return
			}
		}
	})
	rootData := []byte(fmt.Sprintf("generation %d", g))
	var m *manifest.Manifest
	if r.blobs != "" {
		var id [16]byte
		_, _ = rand.Read(id[:])
		m = &manifest.Manifest{Format: manifest.FormatVersion, Generation: g, PublishID: hex.EncodeToString(id[:]),
			PublishedAt: time.Now().UTC(), Publisher: "confbench", Mode: manifest.ModeMulti, Items: map[string]manifest.Item{}}
		for n, b := range items {
			m.Items[n] = manifest.ItemOf(b)
		}
		rootData = m.Encode()
	}
	acl := zk.WorldACL(zk.PermAll)
	write = append(write, &zk.SetDataRequest{Path: r.path, Data: rootData, Version: -1})
	for _, n := range names {
		write = append(write, &zk.SetDataRequest{Path: r.path + "/" + n, Data: items[n], Version: -1})
	}
	if m != nil {
		prev := sched.set(g - 1)
		for _, n := range names {
			old := r.blobs + "/" + manifest.Hash(prev[n])
			write = append(write, &zk.CheckVersionRequest{Path: old, Version: -1})
			undo = append(undo, &zk.DeleteRequest{Path: old, Version: -1},
				&zk.CreateRequest{Path: r.blobs + "/" + m.Items[n].SHA256, Data: items[n], Acl: acl})
		}
		h := fmt.Sprintf("%s/g-%019d", r.history, g)
		write = append(write, &zk.CreateRequest{Path: h, Data: rootData, Acl: acl})
		undo = append(undo, &zk.DeleteRequest{Path: h, Version: -1})
	}
	return write, undo
}

// measurePublishCost interleaves zkconf publishes with the two raw Multis.
// Every run uses roots of its own (suffix run).
func (e *env) measurePublishCost(ctx context.Context, run int, profile bool) (*PublishCost, error) {
	c := e.cfg
	sched := newSchedule("pubcost", c.PublishItems, c.PublishItemSize, c.PublishItems)
	t, err := e.newTarget(ctx, fmt.Sprintf("pubcost-%d", run), sched)
	if err != nil {
		return nil, err
	}
	defer t.close()
	raw, err := dial(ctx, dialOptions{servers: e.srv.addrs, sessionTimeout: c.SessionTimeout, counts: e.newCounts(), log: e.quiet})
	if err != nil {
		return nil, err
	}
	defer raw.conn.Close()
	plain, err := e.newRawRoot(raw.conn, fmt.Sprintf("raw-writes-%d", run), sched, false)
	if err != nil {
		return nil, err
	}
	txn, err := e.newRawRoot(raw.conn, fmt.Sprintf("raw-txn-%d", run), sched, true)
	if err != nil {
		return nil, err
	}
	stop := func() {}
	if profile {
		if stop, err = e.startProfile("publish"); err != nil {
			return nil, err
		}
	}
	defer stop()
	var pub, call, prep, commit, after, rawD, txnD []int64
	rawGen := int64(1)
	runRaw := func(r *rawRoot, out *[]int64, measured bool) error {
		write, undo := r.ops(sched, rawGen+1)
		t0 := time.Now()
		if _, err := raw.conn.Multi(write...); err != nil {
			return fmt.Errorf("raw multi on %s: %w", r.path, err)
		}
		d := time.Since(t0)
		if len(undo) > 0 {
			if _, err := raw.conn.Multi(undo...); err != nil {
				return fmt.Errorf("raw clean-up on %s: %w", r.path, err)
			}
		}
		if measured {
			*out = append(*out, int64(d))
		}
		return nil
	}
	for i := range c.Warmup + c.Publishes {
		measured := i >= c.Warmup
		steps := []func() error{
			func() error {
				pt, err := t.publish(ctx, t.gen+1)
				if err == nil && measured {
					pub = append(pub, pt.acked-pt.call)
					call = append(call, pt.ret-pt.call)
					prep = append(prep, pt.sent-pt.call)
					commit = append(commit, pt.acked-pt.sent)
					after = append(after, pt.ret-pt.acked)
				}
				return err
			},
			func() error { return runRaw(plain, &rawD, measured) },
			func() error { return runRaw(txn, &txnD, measured) },
		}
		for j := range steps {
			if err := steps[(i+j)%len(steps)](); err != nil {
				return nil, err
			}
			if err := e.pause(ctx); err != nil {
				return nil, err
			}
		}
		rawGen++
	}
	pc := &PublishCost{Items: c.PublishItems, ItemSize: c.PublishItemSize,
		Publish: summarize(pub), PublishCall: summarize(call), Prepare: summarize(prep), Commit: summarize(commit),
		AfterAck: summarize(after),
		Raw:      summarize(rawD), RawTxn: summarize(txnD)}
	pc.Ratio = ratio(pc.Publish.P50, pc.Raw.P50)
	return pc, nil
}
