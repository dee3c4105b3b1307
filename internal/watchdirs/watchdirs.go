// Package watchdirs keeps the directories an fsnotify watcher watches
// equal to a wanted set: the agent's drift watcher and confagent's
// configuration watcher.
package watchdirs

import "github.com/fsnotify/fsnotify"

// Sync makes w watch the directories of want: it stops watching what
// watched holds and want does not, watches the others, and records both
// in watched. A directory that cannot be watched is passed to failed and
// left out. It reports whether a directory was added.
func Sync(w *fsnotify.Watcher, watched, want map[string]bool, failed func(dir string, err error)) (added bool) {
	for dir := range watched {
		if !want[dir] {
			_ = w.Remove(dir)
			delete(watched, dir)
		}
	}
	for dir := range want {
		if watched[dir] {
			continue
		}
		if err := w.Add(dir); err != nil {
			failed(dir, err)
			continue
		}
		watched[dir] = true
		added = true
	}
	return added
}
