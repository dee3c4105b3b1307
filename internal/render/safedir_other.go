//go:build !linux

package render

import "os"

// openDirFast is openat2's fast path, which only Linux has: openDir walks.
func openDirFast(string) (*os.Root, bool) { return nil, false }

// stillLeadsTo needs openat2: Commit opens the directory again instead.
func stillLeadsTo(string, *os.Root) (same, known bool) { return false, false }
