// Package httpguard is what confpush serve's dashboard and confagent's HTTP
// endpoint put in front of their handlers against a hostile web page in
// the operator's browser:
//
//   - a Host check against DNS rebinding: a page on a name its attacker
//     controls re-points that name to 127.0.0.1 (or the host's address)
//     and then reads the server as same-origin. The browser still sends
//     the attacker's name in Host, so a server that answers only the names
//     it is known by cannot be read that way. Accepted: no Host (not a
//     browser), any IP literal (a page whose origin is an address is not
//     on a rebindable name), "localhost", the machine's hostname, the host
//     of the listen address when it is a name, and a configured allow-list
//     ("name", ".example.com" for the domain and every name below it, "*"
//     for any). The port is not compared: the name is what an attacker
//     cannot forge, and an ssh tunnel or a port mapping changes the port.
//     A refused request gets 421 Misdirected Request and a short plain
//     message; each refused value is logged at most once a minute.
//   - security headers on every response, refusals and errors included:
//     a Content-Security-Policy (the caller's), nosniff, no referrer,
//     no framing, same-origin resource and opener policies.
package httpguard

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkconf/zkconf/internal/errlist"
)

// CSPPages is the Content-Security-Policy of a server with HTML pages whose
// scripts and styles are its own files: no inline script, style or event
// handler, nothing from elsewhere, no framing, no <base>, no form posts.
const CSPPages = "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// CSPNone is the Content-Security-Policy of a server without pages (JSON,
// text, metrics): nothing may load or run in a document it served.
const CSPNone = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// SetHeaders sets the security headers of every response on h, with csp
// as the Content-Security-Policy.
func SetHeaders(h http.Header, csp string) {
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
}

// Headers returns h with the security headers (csp as the policy) set on
// every response before h runs.
func Headers(h http.Handler, csp string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		SetHeaders(w.Header(), csp)
		h.ServeHTTP(w, r)
	})
}

// Options configures a Guard.
type Options struct {
	// Listen is the configured listen address (host:port); its host is
	// accepted when it is a name.
	Listen string
	// Allowed are further names accepted in Host (see ValidateAllowed).
	Allowed []string
	// CSP is the Content-Security-Policy of every response (CSPNone when
	// empty).
	CSP string
	// Server names the server in the refusal ("confpush serve") and Hint
	// says how to allow a name ("add it with --allowed-host NAME").
	Server, Hint string
	// Log receives the refusals, each Host value at most once a minute
	// (discarded when nil).
	Log *slog.Logger
}

// Guard checks Host and sets the security headers. It is safe for
// concurrent use; SetAllowed replaces the allow-list while it serves.
type Guard struct {
	server, hint, csp string
	fixed             []string // "localhost", the hostname, the listen host
	allowed           atomic.Pointer[[]string]
	log               *slog.Logger

	mu     sync.Mutex
	logged map[string]time.Time // Host value -> when its refusal was last logged
	now    func() time.Time
}

// logEvery is how often one refused Host value is logged at most, and
// maxLogged how many values are remembered for that (beyond it, values
// not seen within logEvery are forgotten, and new ones are not logged
// until there is room: a flood of made-up names cannot grow the map).
const (
	logEvery  = time.Minute
	maxLogged = 256
)

// New returns a Guard; an invalid allow-list entry is an error (every one
// is reported).
func New(o Options) (*Guard, error) {
	if err := ValidateAllowed(o.Allowed); err != nil {
		return nil, err
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	csp := o.CSP
	if csp == "" {
		csp = CSPNone
	}
	g := &Guard{server: o.Server, hint: o.Hint, csp: csp, log: log, logged: map[string]time.Time{}, now: time.Now}
	g.fixed = []string{"localhost"}
	if h, err := os.Hostname(); err == nil && h != "" {
		g.fixed = append(g.fixed, normalize(h))
	}
	if h, _, err := net.SplitHostPort(o.Listen); err == nil && h != "" && net.ParseIP(strings.Trim(h, "[]")) == nil {
		g.fixed = append(g.fixed, normalize(h))
	}
	g.setAllowed(o.Allowed)
	return g, nil
}

// SetAllowed replaces the allow-list (a reloaded configuration); an invalid
// entry leaves the old one and is an error.
func (g *Guard) SetAllowed(allowed []string) error {
	if err := ValidateAllowed(allowed); err != nil {
		return err
	}
	g.setAllowed(allowed)
	return nil
}

func (g *Guard) setAllowed(allowed []string) {
	l := make([]string, 0, len(allowed))
	for _, a := range allowed {
		l = append(l, normalize(a))
	}
	g.allowed.Store(&l)
}

// ValidateAllowed checks allow-list entries: a host name ("dash.example.com"),
// a domain with a leading dot (".example.com": it and every name below it),
// an IP address (always accepted anyway) or "*" (any Host: no check).
// Entries carry no port, since ports are not compared.
func ValidateAllowed(allowed []string) error {
	var errs []error
	for _, a := range allowed {
		if err := validateEntry(a); err != nil {
			errs = append(errs, fmt.Errorf("allowed host %q: %w", a, err))
		}
	}
	return errlist.Join(errs...)
}

func validateEntry(a string) error {
	switch {
	case a == "*":
		return nil
	case a == "" || a == ".":
		return errors.New("empty")
	case net.ParseIP(strings.Trim(a, "[]")) != nil:
		return nil
	}
	if strings.Contains(a, "/") {
		return errors.New("a name, not a URL")
	}
	if _, port, err := net.SplitHostPort(a); err == nil && port != "" {
		return errors.New("a name without a port (ports are not compared)")
	}
	name := strings.TrimSuffix(strings.TrimPrefix(a, "."), ".")
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 {
			return errors.New("not a host name (empty or over-long label)")
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("not a host name (%q)", c)
			}
		}
	}
	return nil
}

// normalize lowercases a name and drops a trailing dot.
func normalize(s string) string {
	return strings.TrimSuffix(strings.ToLower(s), ".")
}

// hostOf returns the host part of a Host header value: without port and
// brackets, normalized.
func hostOf(hostport string) string {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	}
	return normalize(strings.Trim(h, "[]"))
}

// Allows reports whether a request with this Host header value is
// answered.
func (g *Guard) Allows(hostHeader string) bool {
	h := hostOf(hostHeader)
	if h == "" {
		return true
	}
	if ip := strings.SplitN(h, "%", 2)[0]; net.ParseIP(ip) != nil {
		return true
	}
	if slices.Contains(g.fixed, h) {
		return true
	}
	for _, a := range *g.allowed.Load() {
		switch {
		case a == "*" || a == h:
			return true
		case strings.HasPrefix(a, ".") && (h == a[1:] || strings.HasSuffix(h, a)):
			return true
		}
	}
	return false
}

// Wrap returns h behind the guard: every response gets the security
// headers; a request whose Host is not accepted gets 421 and never
// reaches h.
func (g *Guard) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		SetHeaders(w.Header(), g.csp)
		if !g.Allows(r.Host) {
			g.refuse(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func (g *Guard) refuse(w http.ResponseWriter, r *http.Request) {
	if g.shouldLog(r.Host) {
		g.log.Warn("http: refused a request for a Host this server does not answer to (DNS rebinding?)",
			"host", r.Host, "remote", r.RemoteAddr, "path", r.URL.Path)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusMisdirectedRequest)
	msg := fmt.Sprintf("%s: Host %q is not a name this server answers to", g.server, r.Host)
	if g.hint != "" {
		msg += "; " + g.hint
	}
	_, _ = fmt.Fprintln(w, msg)
}

// shouldLog reports whether a refusal of host is logged now, and notes it.
func (g *Guard) shouldLog(host string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	if t, ok := g.logged[host]; ok && now.Sub(t) < logEvery {
		return false
	}
	if _, ok := g.logged[host]; !ok && len(g.logged) >= maxLogged {
		for k, t := range g.logged {
			if now.Sub(t) >= logEvery {
				delete(g.logged, k)
			}
		}
		if len(g.logged) >= maxLogged {
			return false
		}
	}
	g.logged[host] = now
	return true
}
