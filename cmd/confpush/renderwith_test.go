package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkconf/zkconf/internal/layout"
)

// TestPublishRenderWith: publish --render-with AGENTCONFIG refuses a set
// that would fail a host's template (a missing map key), before anything
// is written, naming the configuration, the target and the template
// error; a set that renders is published; a configuration that cannot be
// read is a usage error.
func TestPublishRenderWith(t *testing.T) {
	srv := startZK(t)
	conn := srv.Connect(t, 10*time.Second)
	c := cli{t: t, zk: srv.ConnString(), root: "/rw"}
	meta := layout.New("/rw", layout.DefaultMeta)
	cfgDir := writeFiles(t, t.TempDir(), map[string]string{
		"upstreams.tmpl": `{{ range $name, $pool := json "pools.json" }}upstream {{ $name }} { {{ if $pool.hash }}hash {{ $pool.hash }};{{ end }} }
{{ end }}`,
		"lenient.tmpl": `{{ range $name, $pool := json "pools.json" }}{{ $name }}={{ $pool.port | default 80 }};{{ end }}`,
	})
	cfg := filepath.Join(cfgDir, "web.yaml")
	writeFiles(t, cfgDir, map[string]string{"web.yaml": fmt.Sprintf(`zookeeper: {servers: [zk1.example.com:2181]}
labels: {zone: a}
targets:
  - name: nginx-upstreams
    type: template
    src: upstreams.tmpl
    dest: /etc/nginx/conf.d/upstreams.conf
    owner: no-such-user-on-the-publisher
  - name: lenient
    type: template
    src: lenient.tmpl
    dest: /etc/app/ports
    missing_key: zero
  - name: props
    type: file
    item: app.properties
    dest: %s
`, "/etc/app/app.properties")})

	good := writeFiles(t, t.TempDir(), map[string]string{
		"pools.json":     `{"web": {"hash": "ip"}, "api": {"hash": "uri", "port": 81}}`,
		"app.properties": "x=1\n",
	})
	c.run("publish", "--render-with", cfg, good).want(t, 0, "published generation 1")

	bad := writeFiles(t, t.TempDir(), map[string]string{
		"pools.json": `{"web": {"servers": ["a:80"]}, "api": {"hash": "uri"}}`,
	})
	before := snapshot(t, conn, "/rw", meta.Base())
	o := c.run("publish", "--render-with", cfg, bad)
	o.want(t, 2, "2 problems",
		`--render-with `+cfg+`: target "nginx-upstreams": render: template: nginx-upstreams:1:`,
		`map has no entry for key "hash"`,
		`--render-with `+cfg+`: target "props": item "app.properties" is not in generation 0`)
	if strings.Contains(o.stderr, "lenient") {
		t.Fatalf("the missing_key: zero target failed:\n%s", o.stderr)
	}
	if after := snapshot(t, conn, "/rw", meta.Base()); after != before {
		t.Fatal("a set refused by --render-with was written")
	}
	c.run("publish", "--render-with", filepath.Join(cfgDir, "nope.yaml"), good).want(t, 2, "--render-with "+filepath.Join(cfgDir, "nope.yaml")+": config: read: open")
}
