package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/zkconf/zkconf/cmd/internal/config"
	"github.com/zkconf/zkconf/internal/httpguard"
)

// live holds the settings of the running process that a configuration
// reload applies outside the daemon: the logger's level and format, and
// the HTTP listener.
type live struct {
	logOut io.Writer
	http   *liveHTTP
}

// apply takes over log.*, http.listen and http.allowed_hosts from a
// reloaded configuration.
// log.* is applied first, so that the reload's own messages use the new
// settings. A listener that cannot be bound leaves the old one serving.
func (l *live) apply(cfg *config.Config, f flags, log *slog.Logger, why string) {
	if sw, ok := log.Handler().(*switchHandler); ok {
		if s, err := effectiveLog(cfg, f); err != nil {
			log.Error("log settings not changed", "trigger", why, "error", err)
		} else if cur := sw.root.cur.Load().settings; cur != s {
			sw.root.set(l.logOut, s)
			log.Info("log settings changed", "trigger", why, "level", s.level.String(), "format", s.format)
		}
	}
	if err := l.http.listen(cfg.HTTP.Listen, cfg.HTTP.AllowedHosts); err != nil {
		log.Error("http.listen not changed: the old address keeps serving (a restart is needed if the new address is taken by the old listener)",
			"trigger", why, "addr", cfg.HTTP.Listen, "serving", l.http.addr(), "error", err)
	}
}

// liveHTTP is the HTTP endpoint, re-bound when http.listen changes: the
// new listener is opened first, so a bad address (taken, unresolvable)
// keeps the old one serving, and the old one is shut down after. It
// answers only the Host names httpguard accepts (http.allowed_hosts
// added), which a reload changes without re-binding.
type liveHTTP struct {
	handler http.Handler
	log     *slog.Logger

	mu    sync.Mutex
	cur   string // the configured address, "" when off
	srv   *http.Server
	guard *httpguard.Guard
	done  chan struct{} // closed when srv's Serve returns
}

// listen makes addr the endpoint's address ("" turns it off) and allowed
// the further Host names it answers to.
func (h *liveHTTP) listen(addr string, allowed []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if addr == h.cur && (addr == "") == (h.srv == nil) {
		if h.guard != nil {
			return h.guard.SetAllowed(allowed)
		}
		return nil
	}
	var srv *http.Server
	var guard *httpguard.Guard
	var done chan struct{}
	if addr != "" {
		var err error
		guard, err = httpguard.New(httpguard.Options{Listen: addr, Allowed: allowed, CSP: httpguard.CSPNone,
			Server: "confagent", Hint: "add the name to http.allowed_hosts", Log: h.log})
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return err
		}
		srv = &http.Server{Handler: guard.Wrap(h.handler), ReadHeaderTimeout: 5 * time.Second}
		done = make(chan struct{})
		go func() {
			defer close(done)
			_ = srv.Serve(ln)
		}()
		h.log.Info("http listening", "addr", ln.Addr().String())
	}
	old, oldDone, oldAddr := h.srv, h.done, h.cur
	h.srv, h.done, h.cur, h.guard = srv, done, addr, guard
	if old != nil {
		shutdown(old, oldDone)
		h.log.Info("http stopped listening", "addr", oldAddr)
	}
	return nil
}

// addr returns the configured address being served ("" when off).
func (h *liveHTTP) addr() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cur
}

// close stops the endpoint.
func (h *liveHTTP) close() {
	_ = h.listen("", nil)
}

// shutdown lets requests in flight finish, for a few seconds, then closes.
func shutdown(srv *http.Server, done <-chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		_ = srv.Close()
	}
	<-done
}
