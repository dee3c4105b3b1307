package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/cmd/internal/config"
	"github.com/zkconf/zkconf/internal/watchdirs"
)

// reloadDebounce gathers the events of one edit (an editor's write,
// rename and chmod) into one reload.
const reloadDebounce = 300 * time.Millisecond

// watchedFiles are the files whose change reloads the configuration: the
// configuration file, every template target's src and every confd
// resource file confd_dir gave a target.
func watchedFiles(cfg *config.Config) []string {
	files := []string{cfg.File}
	for _, t := range cfg.Targets {
		if t.Type == config.TargetTemplate && t.Src != "" {
			files = append(files, t.Src)
		}
		if t.Origin != "" { // a confd resource file (confd_dir)
			files = append(files, filepath.Join(cfg.ConfdDir, t.Origin))
		}
	}
	return files
}

// watchConfig reloads the configuration on SIGHUP and whenever the
// configuration file or a template src changes. Directories are watched,
// not files: editors and configuration management replace files by
// rename. A file that is a symlink is watched at both ends (the link's
// directory, and the directory of the file it points to). After every
// accepted reload the set of files follows the new configuration's
// templates. A configuration with errors is rejected with every reason,
// and the running one stays (a template fixed later reloads again).
func watchConfig(ctx context.Context, f flags, d *agent.Daemon, log *slog.Logger, lv *live, files []string) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	fw := newFileWatch(log)
	defer fw.close()
	fw.set(files)
	var debounce <-chan time.Time
	var why string
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			if cfg := reload(f, d, log, lv, "SIGHUP"); cfg != nil {
				fw.set(watchedFiles(cfg))
			}
		case ev, ok := <-fw.events():
			if !ok {
				fw.stop()
				continue
			}
			if what := fw.match(ev.Name); what != "" {
				why = what
				debounce = time.After(reloadDebounce)
			}
		case <-debounce:
			debounce = nil
			if cfg := reload(f, d, log, lv, why); cfg != nil {
				fw.set(watchedFiles(cfg))
			}
		}
	}
}

// fileWatch watches the directories of a set of files and tells which of
// the files an event concerns.
type fileWatch struct {
	log   *slog.Logger
	w     *fsnotify.Watcher // nil when fsnotify is unavailable
	dirs  map[string]bool   // directories watched
	files map[string]string // absolute path (as written, or resolved) -> the file as configured
	first string            // the configuration file
}

func newFileWatch(log *slog.Logger) *fileWatch {
	fw := &fileWatch{log: log, dirs: map[string]bool{}, files: map[string]string{}}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		log.Warn("configuration and template changes are not watched (SIGHUP still reloads)", "error", err)
		return fw
	}
	fw.w = w
	return fw
}

// set makes files (the configuration file first) the watched set.
func (fw *fileWatch) set(files []string) {
	if fw.w == nil {
		return
	}
	want := map[string]string{}
	dirs := map[string]bool{}
	for i, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil {
			continue
		}
		if i == 0 {
			fw.first = abs
		}
		paths := []string{abs}
		if r, err := filepath.EvalSymlinks(abs); err == nil && r != abs {
			paths = append(paths, r)
		}
		for _, p := range paths {
			want[p] = abs
			dirs[filepath.Dir(p)] = true
		}
	}
	watchdirs.Sync(fw.w, fw.dirs, dirs, func(dir string, err error) {
		fw.log.Warn("changes in a directory are not watched (SIGHUP still reloads)", "dir", dir, "error", err)
	})
	fw.files = want
}

// events is the watcher's event channel (nil when there is none).
func (fw *fileWatch) events() <-chan fsnotify.Event {
	if fw.w == nil {
		return nil
	}
	return fw.w.Events
}

// match returns the reload trigger an event on name is ("file change" for
// the configuration file, "template change PATH" for a template), "" when
// it concerns none of the files.
func (fw *fileWatch) match(name string) string {
	abs, err := filepath.Abs(name)
	if err != nil {
		return ""
	}
	f, ok := fw.files[abs]
	switch {
	case !ok:
		return ""
	case f == fw.first:
		return "file change"
	default:
		return "template change " + f
	}
}

// stop forgets a watcher whose channel closed.
func (fw *fileWatch) stop() {
	fw.close()
	fw.w = nil
}

func (fw *fileWatch) close() {
	if fw.w != nil {
		_ = fw.w.Close()
	}
}

// reload loads the configuration again and hands it to the daemon; it
// returns the configuration taken, nil when it was rejected.
func reload(f flags, d *agent.Daemon, log *slog.Logger, lv *live, why string) *config.Config {
	cfg, err := config.Load(f.config)
	if err != nil {
		var sb strings.Builder
		printConfigErr(&sb, f.config, err)
		log.Error("configuration rejected, the running one stays", "trigger", why, "problems", sb.String())
		return nil
	}
	opts, err := options(cfg, log)
	if err != nil {
		log.Error("configuration rejected, the running one stays", "trigger", why, "error", err)
		return nil
	}
	restart, err := d.Reconfigure(opts)
	if err != nil {
		log.Error("configuration rejected, the running one stays", "trigger", why, "error", err)
		return nil
	}
	lv.apply(cfg, f, log, why)
	if len(restart) > 0 {
		log.Warn("configuration reloaded; these changes need a restart and keep their running values",
			"trigger", why, "keys", strings.Join(restart, ","))
	}
	log.Info("configuration reloaded", "trigger", why)
	return cfg
}
