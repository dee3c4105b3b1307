package config

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-multierror"
)

// fixture is a temporary directory with the files configs refer to.
type fixture struct {
	dir string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	f := fixture{dir: t.TempDir()}
	f.write(t, "app.tmpl", `port={{ (json "app.json").port }}`, 0o644)
	f.write(t, "bad.tmpl", `{{ item "x" `, 0o644)
	f.write(t, "exec.tmpl", `{{ exec "id" }}`, 0o644)
	f.write(t, "zk-auth", "user:password\n", 0o600)
	f.write(t, "zk-auth-open", "user:password\n", 0o644)
	return f
}

func (f fixture) write(t *testing.T, name, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(f.dir, name)
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// config writes a config file; "@DIR" in it stands for the fixture dir.
func (f fixture) config(t *testing.T, yaml string) string {
	t.Helper()
	return f.write(t, "confagent.yaml", strings.ReplaceAll(yaml, "@DIR", f.dir), 0o644)
}

const minimal = `
zookeeper:
  servers: [zk1:2181]
targets:
  - name: app
    type: file
    item: app.properties
    dest: /etc/app/app.properties
`

func TestLoadMinimalDefaults(t *testing.T) {
	f := newFixture(t)
	file := f.config(t, minimal)
	c, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	want := &Config{
		File:           file,
		ZooKeeper:      ZooKeeper{Servers: []string{"zk1:2181"}, SessionTimeout: 10 * time.Second},
		Root:           "/config",
		Meta:           "/zkconf",
		StateDir:       "/var/lib/confagent",
		AgentID:        host,
		HTTP:           HTTP{Listen: "127.0.0.1:9464"},
		Log:            Log{Level: slog.LevelInfo, Format: LogText},
		Apply:          ApplyAll,
		MemoryLimit:    MemoryLimitAuto,
		StaleAfter:     60 * time.Second,
		ResyncInterval: 10 * time.Minute,
		ResyncJitter:   5 * time.Second,
		Incarnation:    "follow",
		RenderTimeout:  10 * time.Second,
		RenderSteps:    10_000_000,
		Exec:           Exec{ReloadSignal: "SIGHUP", KillSignal: "SIGTERM", KillTimeout: DefaultExecKillTimeout},
		Targets: []Target{{
			Name: "app", Type: TargetFile, Item: "app.properties", Dest: "/etc/app/app.properties",
			Mode: 0o640, UID: -1, GID: -1, Timeout: 30 * time.Second, Root: DefaultRootName,
		}},
		Roots: []Root{{Name: DefaultRootName, Path: "/config", key: "root"}},
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("Load =\n%+v\nwant\n%+v", c, want)
	}
}

func TestLoadFull(t *testing.T) {
	f := newFixture(t)
	c, err := Load(f.config(t, `
zookeeper:
  servers:
    - zk1:2181
    - zk2:2182
  session_timeout: 4s
  auth_file: zk-auth
root: /cfg/prod
meta: /zkconf-meta
state_dir: /var/lib/agent/
agent_id: 1234
http:
  listen: ""
  allowed_hosts: [web-1.example.com, .corp.example]
status:
  command_output: true
log:
  level: DEBUG
  format: json
apply: independent
stale_after: 2m
resync_interval: 1h
resync_jitter: 0
render_steps: 5_000_000
targets:
  - name: app.props
    type: file
    item: app.properties
    dest: /etc/app//app.properties
    mode: "0600"
    owner: root
    group: "0"
    check: app --check {{.src}}
    reload: systemctl reload app
    timeout: 5s
    follow_symlink: true
  - name: tmpl
    type: template
    src: app.tmpl
    dest: /etc/app/app.conf
    mode: "2750"
    render_timeout: 2s
  - name: certs
    type: dir
    dest: /etc/app/certs/
    items: ["*.pem", "ca-?.crt"]
    owner: "4242"
  - name: sites
    type: dir
    dest: /etc/nginx/conf.d
    src: conf.d/
    dir_mode: "2750"
`))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := c.Targets[1].Template
	if tmpl == nil {
		t.Fatal("template target has no parsed Template")
	}
	c.Targets[1].Template = nil
	want := &Config{
		File: filepath.Join(f.dir, "confagent.yaml"),
		ZooKeeper: ZooKeeper{
			Servers:        []string{"zk1:2181", "zk2:2182"},
			SessionTimeout: 4 * time.Second,
			AuthFile:       filepath.Join(f.dir, "zk-auth"),
		},
		Root:           "/cfg/prod",
		Meta:           "/zkconf-meta",
		StateDir:       "/var/lib/agent",
		AgentID:        "1234",
		HTTP:           HTTP{Listen: "", AllowedHosts: []string{"web-1.example.com", ".corp.example"}},
		Status:         Status{CommandOutput: true},
		Log:            Log{Level: slog.LevelDebug, Format: LogJSON},
		Apply:          ApplyIndependent,
		MemoryLimit:    MemoryLimitAuto,
		StaleAfter:     2 * time.Minute,
		ResyncInterval: time.Hour,
		ResyncJitter:   0,
		Incarnation:    "follow",
		RenderTimeout:  10 * time.Second,
		RenderSteps:    5_000_000,
		Exec:           Exec{ReloadSignal: "SIGHUP", KillSignal: "SIGTERM", KillTimeout: DefaultExecKillTimeout},
		Targets: []Target{
			{
				Name: "app.props", Type: TargetFile, Item: "app.properties", Dest: "/etc/app/app.properties",
				Mode: 0o600, Owner: "root", Group: "0", UID: 0, GID: 0,
				Check: "app --check {{.src}}", Reload: "systemctl reload app", Timeout: 5 * time.Second,
				FollowSymlink: true, Root: DefaultRootName,
			},
			{
				Name: "tmpl", Type: TargetTemplate, Src: filepath.Join(f.dir, "app.tmpl"), Dest: "/etc/app/app.conf",
				Mode: 0o750 | os.ModeSetgid, UID: -1, GID: -1, Timeout: 30 * time.Second,
				RenderTimeout: 2 * time.Second, RenderSteps: 5_000_000, Root: DefaultRootName,
			},
			{
				Name: "certs", Type: TargetDir, Dest: "/etc/app/certs", Items: []string{"*.pem", "ca-?.crt"},
				Mode: 0o640, Owner: "4242", UID: 4242, GID: -1, Timeout: 30 * time.Second,
				GracePeriod: DefaultGracePeriod, Root: DefaultRootName,
			},
			{
				// A dir target's src is an item path prefix, never
				// resolved against the file's directory; no items: all.
				Name: "sites", Type: TargetDir, Dest: "/etc/nginx/conf.d", SrcDir: "conf.d/", DirMode: 0o750 | os.ModeSetgid,
				Mode: 0o640, UID: -1, GID: -1, Timeout: 30 * time.Second, GracePeriod: DefaultGracePeriod, Root: DefaultRootName,
			},
		},
		Roots: []Root{{Name: DefaultRootName, Path: "/cfg/prod", key: "root"}},
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("Load =\n%+v\nwant\n%+v", c, want)
	}
}

func TestLoadEnvOverride(t *testing.T) {
	f := newFixture(t)
	t.Setenv("CONFAGENT_ZOOKEEPER_SERVERS", "a:1, b:2")
	t.Setenv("CONFAGENT_ZOOKEEPER_SESSION_TIMEOUT", "25s")
	t.Setenv("CONFAGENT_LOG_LEVEL", "warn")
	t.Setenv("CONFAGENT_HTTP_LISTEN", "") // set but empty: disables
	t.Setenv("CONFAGENT_AGENT_ID", "from-env")
	t.Setenv("CONFAGENT_APPLY", "independent")
	t.Setenv("CONFAGENT_HTTP_ALLOWED_HOSTS", "a.example, .b.example")
	t.Setenv("CONFAGENT_STATUS_COMMAND_OUTPUT", "true")
	c, err := Load(f.config(t, minimal+"\nagent_id: from-file\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.ZooKeeper.Servers, []string{"a:1", "b:2"}) ||
		c.ZooKeeper.SessionTimeout != 25*time.Second ||
		c.Log.Level != slog.LevelWarn ||
		c.HTTP.Listen != "" ||
		c.AgentID != "from-env" ||
		c.Apply != ApplyIndependent ||
		!reflect.DeepEqual(c.HTTP.AllowedHosts, []string{"a.example", ".b.example"}) || !c.Status.CommandOutput {
		t.Errorf("environment not applied: %+v", c)
	}

	t.Setenv("CONFAGENT_RENDER_TIMEOUT", "3s")
	t.Setenv("CONFAGENT_RENDER_STEPS", "1_000")
	c, err = Load(f.config(t, minimal))
	if err != nil || c.RenderTimeout != 3*time.Second || c.RenderSteps != 1000 {
		t.Errorf("render budget from the environment: %v, %v", c, err)
	}
	t.Setenv("CONFAGENT_RENDER_TIMEOUT", "")
	t.Setenv("CONFAGENT_RENDER_STEPS", "")
	os.Unsetenv("CONFAGENT_RENDER_TIMEOUT")
	os.Unsetenv("CONFAGENT_RENDER_STEPS")

	t.Setenv("CONFAGENT_STALE_AFTER", "soon")
	_, err = Load(f.config(t, minimal))
	// The variable is blamed, not the file.
	assertProblems(t, err, []string{`CONFAGENT_STALE_AFTER: invalid duration "soon"`})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Key != "stale_after" || fe.Env != "CONFAGENT_STALE_AFTER" {
		t.Fatalf("FieldError %+v, want key stale_after from CONFAGENT_STALE_AFTER", fe)
	}
}

func TestLoadBad(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string // every problem, in order
	}{
		{
			name: "empty file",
			yaml: "# nothing\n",
			want: []string{
				"zookeeper.servers: at least one server (host:port) is required",
				"targets: at least one target is required",
			},
		},
		{
			name: "http and status",
			yaml: minimal + `
http:
  allowed_hosts: ["a.example:80", ok.example, "http://b.example"]
status:
  command_output: maybe
`,
			want: []string{
				`status.command_output: must be true or false, got "maybe"`,
				`http.allowed_hosts: allowed host "a.example:80": a name without a port (ports are not compared)`,
				`http.allowed_hosts: allowed host "http://b.example": a name, not a URL`,
			},
		},
		{
			name: "unknown keys",
			yaml: minimal + `
taregts: []
http: 5
zookeeper2: {servers: [x]}
`,
			want: []string{
				"http: must be a mapping",
				`taregts: unknown key (did you mean "targets"?)`,
				"zookeeper2.servers: unknown key",
			},
		},
		{
			name: "unknown nested and target keys",
			yaml: `
zookeeper:
  servers: [zk1:2181]
  sesion_timeout: 3s
targets:
  - name: app
    type: file
    item: a
    dest: /etc/a
    chekc: "true"
    Reload: "x"
    colour: blue
`,
			want: []string{
				`zookeeper.sesion_timeout: unknown key (did you mean "zookeeper.session_timeout"?)`,
				`targets[0].chekc: unknown key (did you mean "check"?)`,
				"targets[0].colour: unknown key",
			},
		},
		{
			name: "servers",
			yaml: `
zookeeper:
  servers: [zk1, "zk2:99999", "zk3:2181", "zk3:2181", "zk4:port", [x]]
targets: [{name: a, type: file, item: a, dest: /etc/a}]
`,
			want: []string{
				"zookeeper.servers[5]: must be a string, got a list",
				`zookeeper.servers[0]: "zk1": want host:port`,
				`zookeeper.servers[1]: "zk2:99999": invalid port "99999"`,
				`zookeeper.servers[3]: "zk3:2181" is listed twice (also zookeeper.servers[2])`,
				`zookeeper.servers[4]: "zk4:port": invalid port "port"`,
			},
		},
		{
			name: "durations",
			yaml: minimal + `
stale_after: 1x
resync_interval: -5m
resync_jitter: 20m
`,
			want: []string{
				`stale_after: invalid duration "1x": use a number with a unit, like "10s" or "1m30s"`,
				"resync_interval: must be a positive duration",
			},
		},
		{
			name: "memory limit",
			yaml: minimal + `
memory_limit: lots
`,
			want: []string{`memory_limit: invalid memory limit "lots": want auto, off or a size like "64MiB"`},
		},
		{
			name: "incarnation policy",
			yaml: minimal + `
incarnation: ignore
`,
			want: []string{`incarnation: unknown policy "ignore": want follow or refuse`},
		},
		{
			name: "memory limit too small",
			yaml: minimal + `
memory_limit: 1MiB
`,
			want: []string{"memory_limit: 1048576 bytes is too small: at least 8MiB, or auto, or off"},
		},
		{
			name: "bare number duration and jitter",
			yaml: `
zookeeper:
  servers: [zk1:2181]
  session_timeout: 10
resync_interval: 1m
resync_jitter: 1m
targets: [{name: a, type: file, item: a, dest: /etc/a, timeout: 0s}]
`,
			want: []string{
				`zookeeper.session_timeout: invalid duration 10: a unit is required, like "10s"`,
				"resync_jitter: 1m0s must be shorter than resync_interval 1m0s",
				"targets[0].timeout: must be a positive duration",
			},
		},
		{
			name: "scalars",
			yaml: minimal + `
root: config
meta: /config/../x
state_dir: var/lib
agent_id: a/b
http: {listen: localhost}
log: {level: verbose, format: xml}
apply: some
`,
			want: []string{
				"log.level: unknown level \"verbose\": want debug, info, warn or error",
				`root: "config": a ZooKeeper path must start with /`,
				`meta: "/config/../x": relative segments (. or ..) are not allowed`,
				`state_dir: "var/lib" must be an absolute path`,
				`agent_id: "a/b" must not contain /`,
				`http.listen: "localhost": want host:port (use "" to disable)`,
				`log.format: unknown format "xml": want text or json`,
				`apply: unknown mode "some": want all or independent`,
			},
		},
		{
			name: "zookeeper paths",
			yaml: minimal + `
root: /config
meta: /config/zkconf
`,
			want: []string{`meta: "/config/zkconf" overlaps root "/config"`},
		},
		{
			name: "reserved zookeeper path",
			yaml: minimal + "root: /zookeeper/x\nmeta: /\n",
			want: []string{
				`root: "/zookeeper/x": /zookeeper is reserved by ZooKeeper`,
				"meta: must not be the ZooKeeper root",
			},
		},
		{
			name: "auth file",
			yaml: `
zookeeper:
  servers: [zk1:2181]
  auth_file: zk-auth-open
targets: [{name: a, type: file, item: a, dest: /etc/a}]
`,
			want: []string{"zookeeper.auth_file: credentials file @DIR/zk-auth-open is accessible by group or others (mode 0644)"},
		},
		{
			name: "missing auth file",
			yaml: `
zookeeper:
  servers: [zk1:2181]
  auth_file: /nonexistent/zk-auth
targets: [{name: a, type: file, item: a, dest: /etc/a}]
`,
			want: []string{"zookeeper.auth_file: credentials file: stat /nonexistent/zk-auth: no such file or directory"},
		},
		{
			name: "targets not a list",
			yaml: "zookeeper: {servers: [zk1:2181]}\ntargets: all\n",
			want: []string{"targets: must be a list of targets, got a string"},
		},
		{
			name: "target not a mapping",
			yaml: "zookeeper: {servers: [zk1:2181]}\ntargets: [app]\n",
			want: []string{"targets[0]: must be a mapping, got a string"},
		},
		{
			name: "render budget",
			yaml: `
zookeeper: {servers: [zk1:2181]}
render_timeout: 0
render_steps: lots
targets:
  - {name: a, type: template, src: "@DIR/app.tmpl", dest: /etc/a, render_timeout: -1s, render_steps: 0}
  - {name: b, type: file, item: b, dest: /etc/b, render_timeout: 5s, render_steps: 12.5}
  - {name: c, type: dir, dest: /etc/c, render_steps: 1000}
`,
			want: []string{
				`render_timeout: must be a positive duration, like "10s"`,
				`render_steps: invalid number "lots": want a whole number like 10000000`,
				`targets[0].render_timeout: must be a positive duration, like "10s"`,
				"targets[0].render_steps: must be a positive number, like 10000000",
				"targets[1].render_steps: must be a whole number, got 12.5",
				"targets[1].render_timeout: only valid for type template (this target is file)",
				"targets[2].render_steps: only valid for type template (this target is dir)",
			},
		},
		{
			name: "grace_period",
			yaml: `
zookeeper: {servers: [zk1:2181]}
targets:
  - {name: a, type: dir, dest: /etc/a, grace_period: -1s}
  - {name: b, type: file, item: b, dest: /etc/b, grace_period: 5s}
`,
			want: []string{
				"targets[0].grace_period: must not be negative (0 removes the previous directory at once)",
				"targets[1].grace_period: only valid for type dir (this target is file)",
			},
		},
		{
			name: "missing_key",
			yaml: `
zookeeper: {servers: [zk1:2181]}
targets:
  - {name: a, type: template, dest: /etc/a, src: app.tmpl, missing_key: ignore}
  - {name: b, type: file, item: b, dest: /etc/b, missing_key: zero}
`,
			want: []string{
				`targets[0].missing_key: unknown value "ignore": want error (the default) or zero`,
				"targets[1].missing_key: only valid for type template (this target is file)",
			},
		},
		{
			name: "trees",
			yaml: `
zookeeper: {servers: [zk1:2181]}
targets:
  - {name: a, type: dir, dest: /etc/a, src: conf.d}
  - {name: b, type: dir, dest: /etc/b, src: "conf.d//x/", dir_mode: "0555"}
  - {name: c, type: file, dest: /etc/c, item: "conf.d/", dir_mode: "0755"}
  - {name: d, type: dir, dest: /etc/d, items: []}
`,
			want: []string{
				`targets[0].src: "conf.d": for a dir target, the directory of the items to render, as an item path ending in '/' (conf.d/)`,
				`targets[1].src: "conf.d//x/": for a dir target, the directory of the items to render, as an item path ending in '/' (conf.d/): item path "conf.d//x": component 2 is empty`,
				`targets[1].dir_mode: 0555: the owner needs rwx`,
				"targets[2].dir_mode: only valid for type dir (this target is file)",
				`targets[2].item: item path "conf.d/" ends with '/'`,
				"targets[3].items: selects no item: omit the key to select all items",
			},
		},
		{
			name: "target basics",
			yaml: `
zookeeper: {servers: [zk1:2181]}
targets:
  - type: file
    item: a
  - name: "my app"
    type: script
    dest: etc/app
  - name: root
    type: file
    item: ../x
    dest: /
`,
			want: []string{
				"targets[0].name: required",
				"targets[0].dest: required",
				`targets[1].name: "my app": use up to 64 letters, digits, '.', '_' or '-'`,
				`targets[1].type: unknown type "script": want file, dir or template`,
				`targets[1].dest: "etc/app" must be an absolute path`,
				"targets[2].dest: must not be the root directory",
				`targets[2].item: item path "../x": component 1 ".." is not a file name`,
			},
		},
		{
			name: "duplicates and overlaps",
			yaml: `
zookeeper: {servers: [zk1:2181]}
state_dir: /var/lib/confagent
targets:
  - {name: a, type: file, item: a, dest: /etc/a}
  - {name: a, type: file, item: b, dest: /etc/b}
  - {name: c, type: file, item: c, dest: /etc/a/}
  - {name: d, type: file, item: d, dest: /var/lib/confagent/d}
  - {name: e, type: dir, dest: /etc/e}
  - {name: f, type: file, item: f, dest: /etc/e/sub/f}
  - {name: g, type: dir, dest: /var}
`,
			want: []string{
				`targets[1].name: duplicate name "a" (also targets[0])`,
				"targets[2].dest: duplicate destination /etc/a (also targets[0])",
				"targets[3].dest: /var/lib/confagent/d is inside state_dir /var/lib/confagent",
				"targets[5].dest: /etc/e/sub/f is inside directory target targets[4] (/etc/e)",
				"targets[6].dest: directory /var contains state_dir /var/lib/confagent",
			},
		},
		{
			name: "type specific keys",
			yaml: `
zookeeper: {servers: [zk1:2181]}
targets:
  - {name: a, type: file, dest: /etc/a, src: x.tmpl, items: ["*"]}
  - {name: b, type: dir, dest: /etc/b, item: x, follow_symlink: true, items: ["[", ""]}
  - {name: c, type: template, dest: /etc/c, item: x}
  - {name: d, type: file, item: d, dest: /etc/d, follow_symlink: maybe}
  - {name: e, type: dir, dest: /etc/e, items: []}
`,
			want: []string{
				"targets[0].src: only valid for type template (this target is file)",
				"targets[0].items: only valid for type dir (this target is file)",
				"targets[0].item: required for type file: the name of the item to write",
				"targets[1].item: only valid for type file (this target is dir)",
				"targets[1].follow_symlink: not valid for type dir",
				`targets[1].items[0]: invalid glob "["`,
				`targets[1].items[1]: invalid glob ""`,
				"targets[2].item: only valid for type file (this target is template)",
				"targets[2].src: required for type template: the template file",
				`targets[3].follow_symlink: must be true or false, got "maybe"`,
				"targets[4].items: selects no item: omit the key to select all items",
			},
		},
		{
			name: "templates",
			yaml: `
zookeeper: {servers: [zk1:2181]}
targets:
  - {name: a, type: template, dest: /etc/a, src: missing.tmpl}
  - {name: b, type: template, dest: /etc/b, src: bad.tmpl}
  - {name: c, type: template, dest: /etc/c, src: "@DIR/exec.tmpl"}
`,
			want: []string{
				"targets[0].src: cannot read template: open @DIR/missing.tmpl: no such file or directory",
				"targets[1].src: cannot parse template: render: template: bad.tmpl:1: unclosed action",
				`targets[2].src: cannot parse template: render: template: exec.tmpl:1: function "exec" not defined`,
			},
		},
		{
			name: "modes owners checks",
			yaml: `
zookeeper: {servers: [zk1:2181]}
targets:
  - {name: a, type: file, item: a, dest: /etc/a, mode: 0640}
  - {name: b, type: file, item: b, dest: /etc/b, mode: "0999"}
  - {name: c, type: file, item: c, dest: /etc/c, mode: "0000"}
  - {name: d, type: file, item: d, dest: /etc/d, owner: no-such-user-zkconf, group: no-such-group-zkconf}
  - {name: e, type: file, item: e, dest: /etc/e, owner: "4294967295", group: [x]}
  - {name: f, type: file, item: f, dest: /etc/f, check: "test -s {{.dest}}"}
  - {name: g, type: file, item: g, dest: /etc/g, check: "test -s {{.src"}
`,
			want: []string{
				`targets[0].mode: must be a quoted octal string like "0640" (an unquoted number is ambiguous in YAML), got a number`,
				`targets[1].mode: invalid mode "0999": want an octal string like "0640"`,
				"targets[2].mode: 0000 would make the file unreadable",
				`targets[3].owner: unknown user "no-such-user-zkconf"`,
				`targets[3].group: unknown group "no-such-group-zkconf"`,
				"targets[4].group: must be a string, got a list",
				`targets[4].owner: "4294967295": invalid numeric id "4294967295"`,
				`targets[5].check: invalid placeholder (only {{.src}} is available): template: check:1:10: executing "check" at <.dest>: map has no entry for key "dest"`,
				"targets[6].check: invalid placeholder (only {{.src}} is available): template: check:1: unclosed action",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			_, err := Load(f.config(t, tt.yaml))
			want := make([]string, len(tt.want))
			for i, w := range tt.want {
				want[i] = strings.ReplaceAll(w, "@DIR", f.dir)
			}
			assertProblems(t, err, want)
		})
	}
}

// assertProblems checks that err is a multierror of exactly len(want)
// FieldErrors, the i-th containing want[i].
func assertProblems(t *testing.T, err error, want []string) {
	t.Helper()
	var merr *multierror.Error
	if !errors.As(err, &merr) {
		t.Fatalf("err = %v (%T), want *multierror.Error", err, err)
	}
	got := make([]string, len(merr.Errors))
	for i, e := range merr.Errors {
		var fe *FieldError
		if !errors.As(e, &fe) {
			t.Errorf("problem %q is not a *FieldError", e)
		}
		got[i] = e.Error()
	}
	if len(got) != len(want) {
		t.Errorf("got %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range min(len(got), len(want)) {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("problem %d = %q, want it to contain %q", i, got[i], want[i])
		}
	}
	if t.Failed() {
		t.Logf("full error:\n%v", err)
	}
}

func TestLoadUnreadable(t *testing.T) {
	f := newFixture(t)
	if _, err := Load(filepath.Join(f.dir, "nope.yaml")); err == nil {
		t.Error("missing file accepted")
	}
	if _, err := Load(f.config(t, "zookeeper: [\n")); err == nil || !strings.Contains(err.Error(), "config: read") {
		t.Errorf("YAML syntax error: %v", err)
	}
}

func TestErrorFormat(t *testing.T) {
	f := newFixture(t)
	_, err := Load(f.config(t, "zookeeper: {servers: [zk1:2181]}\n"))
	if got := err.Error(); got != "config: targets: at least one target is required" {
		t.Errorf("single problem = %q", got)
	}
	_, err = Load(f.config(t, "root: x\n"))
	if got := err.Error(); !strings.HasPrefix(got, "config: 3 problems:\n  - zookeeper.servers: ") {
		t.Errorf("several problems = %q", got)
	}
}

func TestValidateInCode(t *testing.T) {
	c := &Config{
		ZooKeeper:      ZooKeeper{Servers: []string{"zk:2181"}, SessionTimeout: time.Second},
		Root:           "/c",
		Meta:           "/m",
		StateDir:       "/var/lib/x",
		AgentID:        "a",
		Log:            Log{Format: LogText},
		Apply:          ApplyAll,
		MemoryLimit:    MemoryLimitAuto,
		StaleAfter:     time.Minute,
		ResyncInterval: time.Minute,
		Targets: []Target{
			{Name: "t", Type: TargetFile, Item: "i", Dest: "/etc/i", Mode: 0o644, Owner: "root", Timeout: time.Second},
		},
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Targets[0].UID != 0 || c.Targets[0].GID != -1 {
		t.Errorf("owner not resolved: %d:%d", c.Targets[0].UID, c.Targets[0].GID)
	}
	// A render budget left at zero is the template engine's default.
	if c.RenderTimeout != 0 || c.RenderSteps != 0 {
		t.Errorf("Validate filled in the render budget: %v %d", c.RenderTimeout, c.RenderSteps)
	}
	c.Targets[0].Timeout = 0
	c.Apply = ""
	c.RenderSteps = -1
	assertProblems(t, c.Validate(), []string{
		`apply: unknown mode ""`,
		"render_steps: must not be negative",
		"targets[0].timeout: must be a positive duration",
	})
}

func TestCheckCommand(t *testing.T) {
	tests := []struct{ check, staged, want string }{
		{"", "/x", ""},
		{"nginx -t -c {{.src}}", "/etc/nginx/.nginx.conf.zkconf-tmp1", "nginx -t -c '/etc/nginx/.nginx.conf.zkconf-tmp1'"},
		{"cat {{.src}}", "/tmp/it's here", `cat '/tmp/it'\''s here'`},
		{`test -f "$ZKCONF_STAGED"`, "/x", `test -f "$ZKCONF_STAGED"`},
	}
	for _, tt := range tests {
		tg := Target{Check: tt.check}
		got, err := tg.CheckCommand(tt.staged)
		if err != nil || got != tt.want {
			t.Errorf("CheckCommand(%q, %q) = %q, %v; want %q", tt.check, tt.staged, got, err, tt.want)
		}
	}
}

func TestMatchItem(t *testing.T) {
	file := Target{Type: TargetFile, Item: "a.conf"}
	dir := Target{Type: TargetDir, Items: []string{"*.pem", "ca-?.crt"}}
	all := Target{Type: TargetDir}
	sub := Target{Type: TargetDir, SrcDir: "conf.d/", Items: []string{"*.conf"}}
	nested := Target{Type: TargetFile, Item: "conf.d/site.conf"}
	tmpl := Target{Type: TargetTemplate}
	tests := []struct {
		t    *Target
		name string
		want bool
	}{
		{&file, "a.conf", true},
		{&file, "b.conf", false},
		{&dir, "server.pem", true},
		{&dir, "ca-1.crt", true},
		{&dir, "ca-10.crt", false},
		{&dir, "sub/server.pem", false},
		{&all, "sub/deeper/x", true},
		{&all, "x", true},
		{&sub, "conf.d/site.conf", true},
		{&sub, "conf.d/sub/site.conf", false},
		{&sub, "site.conf", false},
		{&sub, "conf.d.bak/site.conf", false},
		{&nested, "conf.d/site.conf", true},
		{&tmpl, "a.conf", false},
	}
	for _, tt := range tests {
		if got := tt.t.MatchItem(tt.name); got != tt.want {
			t.Errorf("%s.MatchItem(%q) = %v", tt.t.Type, tt.name, got)
		}
	}
}

func TestFileOptions(t *testing.T) {
	tg := Target{Mode: 0o600, UID: 1, GID: -1, FollowSymlink: true}
	o := tg.FileOptions()
	if o.Mode != 0o600 || o.UID != 1 || o.GID != -1 || !o.FollowSymlink {
		t.Errorf("FileOptions = %+v", o)
	}
}

// TestExampleConfig keeps examples/agent/confagent.yaml loadable: only the
// template path is redirected to a file that exists here.
func TestExampleConfig(t *testing.T) {
	data, err := os.ReadFile("../../../examples/agent/confagent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	text := strings.Replace(string(data), "/etc/confagent/templates/upstreams.conf.tmpl", "app.tmpl", 1)
	if text == string(data) {
		t.Fatal("example no longer refers to the template path this test redirects")
	}
	c, err := Load(f.config(t, text))
	if err != nil {
		t.Fatalf("example does not load: %v", err)
	}
	if len(c.Targets) != 3 {
		t.Errorf("example has %d targets, want one of each type", len(c.Targets))
	}
	// Every documented key appears in the example.
	for _, k := range append(append([]string{}, topKeys...), targetKeys...) {
		leaf := k[strings.LastIndex(k, ".")+1:]
		if !strings.Contains(string(data), leaf+":") {
			t.Errorf("example does not document %q", k)
		}
	}
}

func TestLoadMemoryLimit(t *testing.T) {
	f := newFixture(t)
	for in, want := range map[string]int64{
		"":                       MemoryLimitAuto,
		"memory_limit: auto":     MemoryLimitAuto,
		"memory_limit: off":      MemoryLimitOff,
		"memory_limit: 64MiB":    64 << 20,
		"memory_limit: 100MB":    100e6,
		"memory_limit: 1GiB":     1 << 30,
		"memory_limit: 20971520": 20 << 20,
	} {
		c, err := Load(f.config(t, minimal+"\n"+in+"\n"))
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if c.MemoryLimit != want {
			t.Errorf("%q: MemoryLimit = %d, want %d", in, c.MemoryLimit, want)
		}
	}
	t.Setenv("CONFAGENT_MEMORY_LIMIT", "off")
	c, err := Load(f.config(t, minimal+"\nmemory_limit: 64MiB\n"))
	if err != nil || c.MemoryLimit != MemoryLimitOff {
		t.Fatalf("environment override: %v, %v", c, err)
	}
}

func TestLoadExec(t *testing.T) {
	f := newFixture(t)
	c, err := Load(f.config(t, minimal))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Exec{ReloadSignal: "SIGHUP", KillSignal: "SIGTERM", KillTimeout: DefaultExecKillTimeout}); !reflect.DeepEqual(c.Exec, want) {
		t.Errorf("defaults: %+v, want %+v", c.Exec, want)
	}
	c, err = Load(f.config(t, minimal+"\nexec:\n  reload_signal: usr2\n  kill_signal: KILL\n  kill_timeout: 5s\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Exec.ReloadSignal != "SIGUSR2" || c.Exec.KillSignal != "SIGKILL" || c.Exec.KillTimeout != 5*time.Second {
		t.Errorf("exec: %+v", c.Exec)
	}
	_, err = Load(f.config(t, minimal+"\nexec:\n  reload_signal: SIGKILL\n  restart: true\n  kill_signal: STOP\n  kill_timeout: -1s\n  targets: [nope]\n  bogus: 1\n"))
	for _, want := range []string{
		"exec.reload_signal: not used with exec.restart: true",
		`exec.kill_signal: unknown or unusable signal "STOP"`,
		"exec.kill_timeout: must not be negative",
		`exec.targets[0]: no target is named "nope"`,
		"exec.bogus: unknown key",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not say %q", err, want)
		}
	}
	_, err = Load(f.config(t, minimal+"\nexec:\n  reload_signal: SIGKILL\n"))
	if err == nil || !strings.Contains(err.Error(), `exec.reload_signal: unknown or unusable signal "SIGKILL": want one of SIGHUP,`) || strings.Contains(err.Error(), "SIGALRM, SIGKILL") {
		t.Errorf("SIGKILL as reload_signal: %v", err)
	}
}

// TestLoadRoots: the key roots (name → path, or {path, auth_file}), each
// target's root (the only one by default), a template's extra roots.
func TestLoadRoots(t *testing.T) {
	f := newFixture(t)
	f.write(t, "both.tmpl", `{{ item "common" "db.json" }} {{ "x" | item "common" }} {{ item "site" }}`, 0o644)
	c, err := Load(f.config(t, `
zookeeper:
  servers: [zk1:2181]
roots:
  common: /config/common
  web:
    path: /config/web
    auth_file: zk-auth
targets:
  - name: shared
    type: file
    item: db.json
    root: common
    dest: /etc/app/db.json
  - name: both
    type: template
    src: both.tmpl
    root: web
    roots: [common]
    dest: /etc/app/both.conf
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Root{
		{Name: "common", Path: "/config/common", key: "roots.common"},
		{Name: "web", Path: "/config/web", AuthFile: filepath.Join(f.dir, "zk-auth"), key: "roots.web.path"},
	}
	if !reflect.DeepEqual(c.Roots, want) || c.Root != "" {
		t.Errorf("Roots = %+v, Root %q; want %+v and no Root", c.Roots, c.Root, want)
	}
	if c.Targets[0].Root != "common" || c.Targets[1].Root != "web" || !slices.Equal(c.Targets[1].Roots, []string{"common"}) {
		t.Errorf("targets' roots: %q, %q %q", c.Targets[0].Root, c.Targets[1].Root, c.Targets[1].Roots)
	}
	if got := c.Targets[1].Template.RootRefs(); !slices.Equal(got, []string{"common"}) {
		t.Errorf("RootRefs = %q, want [common]", got)
	}
	specs, err := c.TargetSpecs()
	if err != nil || specs[1].Root != "web" || !slices.Equal(specs[1].Roots, []string{"common"}) {
		t.Errorf("TargetSpecs: %v, %+v", err, specs)
	}

	// One root in roots is the agent's Root, as the key root is.
	c, err = Load(f.config(t, "zookeeper: {servers: [zk1:2181]}\nroots: {web: /config/web}\n"+
		"targets: [{name: a, type: file, item: a, dest: /etc/a}]\n"))
	if err != nil || c.Root != "/config/web" || c.Targets[0].Root != "web" {
		t.Errorf("one root in roots: %v, Root %q, target root %q", err, c.Root, c.Targets[0].Root)
	}
}

// TestLoadRootsBad: every problem with roots is reported at once.
func TestLoadRootsBad(t *testing.T) {
	f := newFixture(t)
	f.write(t, "other.tmpl", `{{ item "common" "a" }}{{ json "nope" "b" }}`, 0o644)
	_, err := Load(f.config(t, `
zookeeper:
  servers: [zk1:2181]
root: /config
meta: /config/common/meta
roots:
  common: /config/common
  web: {path: /config/common/web, auth_file: zk-auth-open, colour: blue}
  bad_: 7
targets:
  - name: a
    type: file
    item: a
    dest: /etc/a
  - name: b
    type: file
    item: b
    root: nope
    roots: [common]
    dest: /etc/b
  - name: c
    type: template
    src: other.tmpl
    root: web
    roots: [web, mars, mars]
    dest: /etc/c
`))
	assertProblems(t, err, []string{
		`roots.bad_: must be a ZooKeeper path or a mapping {path, auth_file}, got a number`,
		`roots.web.colour: unknown key`,
		`roots: root and roots are exclusive`,
		`meta: "/config/common/meta" overlaps root "/config/common"`,
		`roots.web.path: "/config/common/web" overlaps root common ("/config/common")`,
		`roots.web.auth_file: credentials file`,
		`targets[0].root: required with several roots: one of bad_, common, web`,
		`targets[1].root: unknown root "nope" (roots: bad_, common, web)`,
		`targets[1].roots: only valid for type template (this target is file)`,
		`targets[2].roots[0]: "web" is the target's own root (key root)`,
		`targets[2].roots[1]: unknown root "mars"`,
		`targets[2].roots[2]: "mars" is listed twice`,
		`targets[2].src: the template reads root "common", which the target does not list in roots`,
		`targets[2].src: the template reads root "nope", which the target does not list in roots`,
	})
}

// TestExampleRoots keeps examples/roots loadable: two roots, a target of
// the shared one and a template over both.
func TestExampleRoots(t *testing.T) {
	c, err := Load("../../../examples/roots/confagent.yaml")
	if err != nil {
		t.Fatalf("examples/roots does not load: %v", err)
	}
	if len(c.Roots) != 2 || c.Targets[1].Root != "web" || !slices.Equal(c.Targets[1].Roots, []string{"common"}) {
		t.Errorf("examples/roots: roots %+v, targets %+v", c.Roots, c.Targets)
	}
}
