package publish

// testHooks are the points where this package's tests step into a
// publish: to pause it, to count or fail its marker-mode item writes, or
// to stop it right after its acknowledgement as if the publisher had died
// there. Every production Publisher has the zero value, whose methods do
// nothing; only the unexported Options of export_test.go set the fields.
type testHooks struct {
	// beforeCommit runs right before each commit request is sent. Stages:
	// "multi" (a multi-mode commit), "marker" (the Multi setting the
	// marker), "final" (the marker-mode final commit).
	beforeCommit func(stage string)
	// afterItemWrite runs after each item write of a marker-mode publish
	// with the number of writes done so far; an error stops the publish
	// there. While it is set the writes go one at a time, so the count
	// follows the writes' order.
	afterItemWrite func(written int) error
	// afterAck runs right after a commit was acknowledged (or found
	// landed), before the new contents' blobs are stored and before GC.
	// Returning true makes Publish return there.
	afterAck func() (stop bool)
	// noCarry keeps the entering contents' blobs out of the multi-mode
	// commit (plan.carried), as a publisher before the commit carried
	// them, or one of a set beyond carryBytes, commits: what a publisher
	// dying after its acknowledgement then leaves missing is what the
	// next commit's departing Checks find.
	noCarry bool
}

func (h *testHooks) commitSending(stage string) {
	if h.beforeCommit != nil {
		h.beforeCommit(stage)
	}
}

func (h *testHooks) itemWritten(written int) error {
	if h.afterItemWrite != nil {
		return h.afterItemWrite(written)
	}
	return nil
}

// itemWriters is how many marker-mode item writes may be in flight: n, or
// one while a test counts them.
func (h *testHooks) itemWriters(n int) int {
	if h.afterItemWrite != nil {
		return 1
	}
	return n
}

func (h *testHooks) stopAfterAck() bool {
	return h.afterAck != nil && h.afterAck()
}
