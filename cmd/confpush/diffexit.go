package main

// reportedError ends a command whose output was printed in full: only
// its exit code is left to say (diff --exit-code: 10 when there are
// differences). fail prints nothing more for it, in text or --json.
type reportedError struct {
	code int
	kind string
}

func (e reportedError) Error() string { return e.kind }

// diffExit is the end of a diff: with --exit-code, a reportedError (exit
// 10) when there are differences, as git diff --exit-code exits 1 — not 1
// here, which is confpush's "error": a drift check must tell drift from an
// unreachable ZooKeeper.
func (a *app) diffExit(unchanged bool) error {
	if unchanged || !a.v.GetBool("exit-code") {
		return nil
	}
	return reportedError{code: exitDiffers, kind: "differences"}
}
