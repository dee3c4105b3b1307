package main

import (
	"net"
	"path/filepath"
	"testing"
)

// TestServeBadFlags: serve checks its flags and takes its port before it
// dials ZooKeeper (none runs here): each problem is a usage error (exit 2)
// naming the flag.
func TestServeBadFlags(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	missing := filepath.Join(t.TempDir(), "missing.pem")
	c := cli{t: t, zk: "127.0.0.1:1", root: "/config"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--tls-cert", missing}, "--tls-cert and --tls-key go together"},
		{[]string{"serve", "--tls-key", missing}, "--tls-cert and --tls-key go together"},
		{[]string{"serve", "--tls-cert", missing, "--tls-key", missing}, "--tls-cert/--tls-key: open " + missing},
		{[]string{"serve", "--listen", busy.Addr().String()}, "--listen: listen tcp " + busy.Addr().String()},
		{[]string{"serve", "--listen", "nonsense"}, "--listen: listen tcp: address nonsense"},
		{[]string{"serve", "--prefix", "config/"}, "--prefix: root \"config/\" must be an absolute ZooKeeper path"},
		{[]string{"serve", "--allowed-host", "dash.example:8080"}, `--allowed-host: allowed host "dash.example:8080": a name without a port (ports are not compared)`},
		{[]string{"serve", "--allowed-host", "dash.example,a b"}, `--allowed-host: allowed host "a b": not a host name`},
		// Every problem at once.
		{[]string{"serve", "--tls-key", missing, "--prefix", "config/", "--allowed-host", "http://x"}, "3 problems:"},
	} {
		c.run(tc.args...).want(t, 2, tc.want)
	}
}
