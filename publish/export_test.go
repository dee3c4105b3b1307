package publish

import "errors"

// The test seams of package publish (see testHooks).

// withBeforeCommit makes fn run right before each commit request is sent
// (testHooks.beforeCommit).
func withBeforeCommit(fn func(stage string)) Option {
	return func(c *config) { c.hooks.beforeCommit = fn }
}

// withMarkerWrite makes fn run after each item write of a marker-mode
// publish with the number of writes done so far; an error it returns
// aborts the publish there (testHooks.afterItemWrite). To stop the publish
// dead, as if its process had been killed, fn closes the publisher's
// connection (its session, and with it the liveness node, goes; no
// clean-up can reach ZooKeeper) and returns errSimulatedCrash.
func withMarkerWrite(fn func(written int) error) Option {
	return func(c *config) { c.hooks.afterItemWrite = fn }
}

// withAfterCommit makes fn run right after a commit was acknowledged (or
// found landed), before the new contents' blobs are stored and before GC;
// returning true makes Publish return there, as if the publisher had died
// right after its acknowledgement (testHooks.afterAck).
func withAfterCommit(fn func() (stop bool)) Option {
	return func(c *config) { c.hooks.afterAck = fn }
}

// errSimulatedCrash is what a withMarkerWrite hook returns when it stops
// a marker-mode publish dead.
var errSimulatedCrash = errors.New("publish: simulated crash (test seam)")

// withoutCarry keeps the new contents' blobs out of multi-mode commits
// (testHooks.noCarry).
func withoutCarry() Option {
	return func(c *config) { c.hooks.noCarry = true }
}
