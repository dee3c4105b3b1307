package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSystemdUnitsVerify runs systemd-analyze verify on both units, with
// ExecStart pointing at the binary under test.
func TestSystemdUnitsVerify(t *testing.T) {
	dir := t.TempDir()
	for _, unit := range []string{"confagent.service", "confagent@.service"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "systemd", unit))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(b), "/usr/local/bin/confagent", binary)
		name := unit
		if strings.HasSuffix(unit, "@.service") {
			name = "confagent@web.service" // a template is verified as an instance
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		verifyUnit(t, filepath.Join(dir, name))
	}
}

// TestNotifyProtocol runs confagent under a fake NOTIFY_SOCKET: it must
// send READY=1 with a STATUS naming the generation after its first render,
// and WATCHDOG=1 pings from its main loop.
func TestNotifyProtocol(t *testing.T) {
	e := newEnv(t)
	e.publish(t, set(1, 2))
	sock := filepath.Join(t.TempDir(), "notify.sock")
	ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	t.Setenv("NOTIFY_SOCKET", sock)
	t.Setenv("WATCHDOG_USEC", "600000") // pings every 200ms
	e.start(t)
	var ready, status, watchdog bool
	buf := make([]byte, 4096)
	deadline := time.Now().Add(30 * time.Second)
	for !(ready && status && watchdog) {
		_ = ln.SetReadDeadline(deadline)
		n, _, err := ln.ReadFromUnix(buf)
		if err != nil {
			t.Fatalf("notify messages so far: ready=%v status=%v watchdog=%v: %v", ready, status, watchdog, err)
		}
		for _, line := range strings.Split(string(buf[:n]), "\n") {
			switch {
			case line == "READY=1":
				ready = true
			case strings.HasPrefix(line, "STATUS=generation 1 applied"):
				status = true
			case line == "WATCHDOG=1":
				watchdog = true
			}
		}
	}
}
