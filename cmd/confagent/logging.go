package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/zkconf/zkconf/cmd/internal/config"
)

// logSettings are the effective log.level and log.format: the file's,
// overridden by --log-level and --log-format.
type logSettings struct {
	level  slog.Level
	format string
}

func effectiveLog(cfg *config.Config, f flags) (logSettings, error) {
	s := logSettings{level: cfg.Log.Level, format: string(cfg.Log.Format)}
	if f.logLevel != "" {
		if err := s.level.UnmarshalText([]byte(f.logLevel)); err != nil {
			return s, fmt.Errorf("--log-level %q: %w", f.logLevel, err)
		}
	}
	if f.logFormat != "" {
		s.format = f.logFormat
	}
	if s.format == "" {
		s.format = string(config.LogText)
	}
	if s.format != "text" && s.format != "json" {
		return s, fmt.Errorf("--log-format %q: want text or json", s.format)
	}
	return s, nil
}

// newLogger returns confagent's logger. Its handler is a *switchHandler, so
// a reload can change the level and format of every logger derived from
// it (the cache's, the daemon's, the ZooKeeper client's) at once.
func newLogger(w io.Writer, cfg *config.Config, f flags) (*slog.Logger, error) {
	s, err := effectiveLog(cfg, f)
	if err != nil {
		return nil, err
	}
	sw := &switchHandler{root: &switchRoot{}}
	sw.root.set(w, s)
	return slog.New(sw), nil
}

// newHandler is the one place log records get their format, durations
// included (logDurations).
func newHandler(w io.Writer, s logSettings) slog.Handler {
	ho := &slog.HandlerOptions{Level: s.level, ReplaceAttr: logDurations(s.format == "json")}
	if s.format == "json" {
		return slog.NewJSONHandler(w, ho)
	}
	return slog.NewTextHandler(w, ho)
}

// logDurations writes every time.Duration attribute for its reader: in
// JSON as a number of seconds under the key with "_seconds" appended
// ("duration": 12ms becomes "duration_seconds": 0.012; slog's default is
// an integer of nanoseconds, which no log pipeline reads as a duration),
// in text as Go's duration syntax rounded to what a person reads
// ("1.234s", "850µs").
func logDurations(json bool) func(groups []string, a slog.Attr) slog.Attr {
	return func(_ []string, a slog.Attr) slog.Attr {
		if a.Value.Kind() != slog.KindDuration {
			return a
		}
		d := a.Value.Duration()
		if json {
			key := a.Key
			if !strings.HasSuffix(key, "_seconds") {
				key += "_seconds"
			}
			return slog.Float64(key, d.Seconds())
		}
		switch {
		case d >= time.Second || d <= -time.Second:
			d = d.Round(time.Millisecond)
		case d >= time.Millisecond || d <= -time.Millisecond:
			d = d.Round(10 * time.Microsecond)
		}
		return slog.String(a.Key, d.String())
	}
}

// switchRoot holds the handler every switchHandler derived from one
// logger writes through; set replaces it.
type switchRoot struct {
	cur atomic.Pointer[rootHandler]
}

type rootHandler struct {
	h        slog.Handler
	settings logSettings
}

func (r *switchRoot) set(w io.Writer, s logSettings) {
	r.cur.Store(&rootHandler{h: newHandler(w, s), settings: s})
}

// switchHandler is a slog.Handler whose level and format can change while
// loggers derived from it (With, WithGroup) are in use: each remembers its
// derivation and applies it to the current root handler, once per root.
type switchHandler struct {
	root   *switchRoot
	derive []func(slog.Handler) slog.Handler
	cache  atomic.Pointer[derivedHandler]
}

type derivedHandler struct {
	from *rootHandler
	h    slog.Handler
}

func (s *switchHandler) current() slog.Handler {
	root := s.root.cur.Load()
	if c := s.cache.Load(); c != nil && c.from == root {
		return c.h
	}
	h := root.h
	for _, d := range s.derive {
		h = d(h)
	}
	s.cache.Store(&derivedHandler{from: root, h: h})
	return h
}

func (s *switchHandler) with(d func(slog.Handler) slog.Handler) *switchHandler {
	derive := append(append([]func(slog.Handler) slog.Handler(nil), s.derive...), d)
	return &switchHandler{root: s.root, derive: derive}
}

// Enabled implements slog.Handler.
func (s *switchHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return s.current().Enabled(ctx, l)
}

// Handle implements slog.Handler.
func (s *switchHandler) Handle(ctx context.Context, r slog.Record) error {
	return s.current().Handle(ctx, r)
}

// WithAttrs implements slog.Handler.
func (s *switchHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return s.with(func(h slog.Handler) slog.Handler { return h.WithAttrs(attrs) })
}

// WithGroup implements slog.Handler.
func (s *switchHandler) WithGroup(name string) slog.Handler {
	return s.with(func(h slog.Handler) slog.Handler { return h.WithGroup(name) })
}
