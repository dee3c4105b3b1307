// Package logfilter is a slog.Handler that passes on only the records at
// or above a level: the cache's default logger (WARN and above to
// slog.Default) and the benchmarks' quiet loggers.
package logfilter

import (
	"context"
	"log/slog"
)

// AtLeast returns a handler that passes to h only the records at min or
// above.
func AtLeast(h slog.Handler, min slog.Level) slog.Handler {
	return filter{h: h, min: min}
}

type filter struct {
	h   slog.Handler
	min slog.Level
}

func (f filter) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= f.min && f.h.Enabled(ctx, l)
}

func (f filter) Handle(ctx context.Context, r slog.Record) error { return f.h.Handle(ctx, r) }

func (f filter) WithAttrs(attrs []slog.Attr) slog.Handler {
	return filter{h: f.h.WithAttrs(attrs), min: f.min}
}

func (f filter) WithGroup(name string) slog.Handler {
	return filter{h: f.h.WithGroup(name), min: f.min}
}
