//go:build unix && !(linux && (amd64 || arm64))

package durable

// syncAIO is not available here: the caller fsyncs the files itself.
func syncAIO([]int) ([]error, bool) { return nil, false }
