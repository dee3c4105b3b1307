//go:build !linux

package render

import "os"

// freeSyncMemo is empty here.
type freeSyncMemo struct{}

// freeSync reports false: the inode scan it avoids is ext4's (Linux).
func (*freeSyncMemo) freeSync(*os.File) bool { return false }

// markFreeSync is never called here.
func markFreeSync(*os.File) {}

// hasFreeSync reports false.
func hasFreeSync(*os.File) bool { return false }
