//go:build !linux

package agent

// releaseFilePages does nothing where the agent does not know the
// process's mappings.
func releaseFilePages() (int64, error) { return 0, nil }
