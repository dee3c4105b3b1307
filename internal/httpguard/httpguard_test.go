package httpguard

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

func TestAllows(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(Options{Listen: "dash.internal:8080", Allowed: []string{"web-1.example.com", ".corp.example", "Upper.Example"}})
	if err != nil {
		t.Fatal(err)
	}
	for h, want := range map[string]bool{
		"":                          true,
		"127.0.0.1:8080":            true,
		"127.0.0.1":                 true,
		"[::1]:8080":                true,
		"[::1]":                     true,
		"10.0.0.5:9464":             true,
		"[fe80::1%25eth0]:9464":     true,
		"localhost:8080":            true,
		"LOCALHOST.:1234":           true,
		host + ":9464":              true,
		strings.ToUpper(host):       true,
		"dash.internal:8080":        true,
		"dash.internal:9999":        true, // ports are not compared
		"web-1.example.com:9464":    true,
		"upper.example":             true,
		"corp.example":              true,
		"a.b.corp.example:443":      true,
		"evil.example:8080":         false,
		"evil.example":              false,
		"localhost.evil.example":    false,
		"127.0.0.1.evil.example":    false,
		"web-1.example.com.evil.io": false,
		"xcorp.example":             false,
		"example.com":               false,
		"2130706433":                false,
		"localhos":                  false,
	} {
		if got := g.Allows(h); got != want {
			t.Errorf("Allows(%q) = %v, want %v", h, got, want)
		}
	}
	if err := g.SetAllowed([]string{"*"}); err != nil {
		t.Fatal(err)
	}
	if !g.Allows("evil.example") {
		t.Error(`"*" does not allow every Host`)
	}
}

func TestValidateAllowed(t *testing.T) {
	if err := ValidateAllowed([]string{"a.example", ".example.org", "*", "10.0.0.5", "[::1]", "host_1"}); err != nil {
		t.Fatal(err)
	}
	err := ValidateAllowed([]string{"", "a.example:8080", "a..b", "a b", "http://x"})
	if err == nil {
		t.Fatal("bad entries accepted")
	}
	for _, want := range []string{`allowed host ""`, `"a.example:8080": a name without a port`, `"a..b": not a host name`,
		`"a b": not a host name`, `"http://x": a name, not a URL`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %s:\n%v", want, err)
		}
	}
	g, _ := New(Options{Allowed: []string{"a.example"}})
	if g.SetAllowed([]string{"a:1"}) == nil || !g.Allows("a.example") {
		t.Error("an invalid SetAllowed replaced the allow-list")
	}
}

// TestWrap: a refused Host gets 421 with the headers and a plain message,
// and never reaches the handler; its refusal is logged once a minute per
// value.
func TestWrap(t *testing.T) {
	var logBuf bytes.Buffer
	g, err := New(Options{CSP: CSPPages, Server: "test server", Hint: "add it with --allowed-host",
		Log: slog.New(slog.NewTextHandler(&logBuf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	g.now = func() time.Time { return now }
	reached := 0
	srv := httptest.NewServer(g.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		reached++
		_, _ = io.WriteString(w, "secret")
	})))
	defer srv.Close()
	get := func(host string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+"/x", nil)
		req.Host = host
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	for range 3 {
		resp, body := get("evil.example:1234")
		if resp.StatusCode != http.StatusMisdirectedRequest || strings.Contains(body, "secret") ||
			body != "test server: Host \"evil.example:1234\" is not a name this server answers to; add it with --allowed-host\n" {
			t.Fatalf("foreign Host: %d %q", resp.StatusCode, body)
		}
		if resp.Header.Get("Content-Security-Policy") != CSPPages || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("refusal without the headers: %v", resp.Header)
		}
	}
	if reached != 0 {
		t.Fatalf("the handler ran %d times for a foreign Host", reached)
	}
	if n := strings.Count(logBuf.String(), "refused a request"); n != 1 {
		t.Fatalf("3 refusals in a minute logged %d times:\n%s", n, logBuf.String())
	}
	now = now.Add(logEvery)
	get("evil.example:1234")
	get("other.example")
	if n := strings.Count(logBuf.String(), "refused a request"); n != 3 {
		t.Fatalf("a minute later and a new value: %d log lines:\n%s", n, logBuf.String())
	}
	resp, body := get("localhost:1")
	if resp.StatusCode != 200 || body != "secret" || resp.Header.Get("Referrer-Policy") != "no-referrer" {
		t.Fatalf("localhost: %d %q %v", resp.StatusCode, body, resp.Header)
	}
}

// TestLogMemoryBounded: made-up Host values cannot grow the refusal log's
// memory beyond maxLogged.
func TestLogMemoryBounded(t *testing.T) {
	g, _ := New(Options{})
	now := time.Unix(1000, 0)
	g.now = func() time.Time { return now }
	for i := range 3 * maxLogged {
		g.shouldLog(strings.Repeat("x", i%50) + string(rune('a'+i%26)) + time.Duration(i).String())
	}
	if len(g.logged) > maxLogged {
		t.Fatalf("%d values remembered", len(g.logged))
	}
	now = now.Add(logEvery)
	if !g.shouldLog("fresh.example") {
		t.Fatal("a new value is not logged once the old ones are a minute old")
	}
}
