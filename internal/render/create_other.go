//go:build !linux

package render

import "os"

// bareCreate is false here: writeBatch writes through *os.File.
func bareCreate(FileOptions) bool { return false }

// writeBatchAt is not used where bareCreate is false.
func writeBatchAt(*os.File, string, []string, map[string][]byte, FileOptions, bool, *poolDraw) ([]fileID, error) {
	panic("render: writeBatchAt without bare descriptors")
}
