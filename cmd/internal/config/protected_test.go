package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkconf/zkconf/internal/zktest"
)

// TestDestProtected: a target may not write the agent's own configuration
// file, credentials, TLS files, template sources or state directory (nor
// anything inside them, nor, for a dir target, a directory containing
// them), also when the path reaches them through a symlink. A publisher
// could otherwise replace the agent's check commands and run code on every
// host. Every such target is reported at once.
func TestDestProtected(t *testing.T) {
	f := newFixture(t)
	ca, err := zktest.NewCA(f.dir, "zk")
	if err != nil {
		t.Fatal(err)
	}
	cert, key, _, err := ca.Issue("client", []string{"client"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(f.dir, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	// A symlink to the state directory, and one to the config directory.
	if err := os.Symlink(state, filepath.Join(f.dir, "statelink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(f.dir, filepath.Join(f.dir, "cfglink")); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(f.dir, "confagent.yaml")
	yaml := `
zookeeper:
  servers: [zk1:2181]
  auth_file: @DIR/zk-auth
  tls: {ca_file: ` + ca.CertFile + `, cert_file: ` + cert + `, key_file: ` + key + `}
state_dir: @DIR/state
targets:
  - {name: t0, type: file, item: a, dest: @DIR/confagent.yaml}
  - {name: t1, type: dir, dest: @DIR}
  - {name: t2, type: file, item: a, dest: @DIR/zk-auth}
  - {name: t3, type: file, item: a, dest: ` + ca.CertFile + `}
  - {name: t4, type: file, item: a, dest: ` + cert + `}
  - {name: t5, type: file, item: a, dest: ` + key + `}
  - {name: t6, type: file, item: a, dest: @DIR/statelink/snapshot.state}
  - {name: t7, type: dir, dest: @DIR/state/snapshot.state.d}
  - {name: t8, type: template, src: @DIR/app.tmpl, dest: @DIR/cfglink/app.tmpl}
  - {name: t9, type: file, item: a, dest: @DIR/cfglink/../cfglink/confagent.yaml}
  - {name: ok, type: file, item: a, dest: /etc/app/ok.conf}
`
	_, err = Load(f.config(t, yaml))
	if err == nil {
		t.Fatal("Load accepted targets writing the agent's own files")
	}
	msg := err.Error()
	for _, want := range []string{
		"targets[0].dest: " + cfg + " is or is inside the configuration file " + cfg,
		"targets[1].dest: directory " + f.dir + " contains state_dir " + state,
		"targets[2].dest: " + filepath.Join(f.dir, "zk-auth") + " is or is inside zookeeper.auth_file",
		"targets[3].dest: " + ca.CertFile + " is or is inside zookeeper.tls.ca_file",
		"targets[4].dest: " + cert + " is or is inside zookeeper.tls.cert_file",
		"targets[5].dest: " + key + " is or is inside zookeeper.tls.key_file",
		"targets[6].dest: " + filepath.Join(f.dir, "statelink/snapshot.state") + " is inside state_dir " + state,
		"targets[7].dest: " + filepath.Join(state, "snapshot.state.d") + " is inside state_dir " + state,
		"targets[8].dest: " + filepath.Join(f.dir, "cfglink/app.tmpl") + " is or is inside targets[8].src",
		"targets[9].dest: " + filepath.Join(f.dir, "cfglink/confagent.yaml") + " is or is inside the configuration file",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing problem %q in:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "targets[10]") {
		t.Errorf("a harmless target was refused:\n%s", msg)
	}
	if got := strings.Count(msg, "\n"); got < 10 {
		t.Errorf("not every problem reported at once (%d lines):\n%s", got, msg)
	}
}
