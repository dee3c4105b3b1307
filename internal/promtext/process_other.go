//go:build !linux

package promtext

// processCollector exports nothing outside Linux: the process_* families
// are read from /proc (see process_linux.go).
type processCollector struct{}

// NewProcessCollector returns the process_* families on Linux; elsewhere
// a collector that exports nothing.
func NewProcessCollector() Collector { return processCollector{} }

func (processCollector) names() []string      { return nil }
func (processCollector) collect(func(family)) {}
