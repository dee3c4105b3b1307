// Package config loads and validates confagent's YAML configuration.
//
// The file is read with viper; every scalar key can be overridden from the
// environment with the prefix CONFAGENT_ and dots replaced by underscores
// (CONFAGENT_ZOOKEEPER_SESSION_TIMEOUT=20s, CONFAGENT_LOG_LEVEL=debug,
// CONFAGENT_ZOOKEEPER_SERVERS=zk1:2181,zk2:2181). Targets can only be
// configured in the file.
//
// Load and Validate report every problem at once, each naming the
// offending key ("targets[2].dest: must be an absolute path"), so that an
// operator fixes a file in one pass instead of one error per restart.
// The documented example is examples/agent/confagent.yaml.
package config

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	texttemplate "text/template"
	"time"

	"github.com/spf13/viper"

	"github.com/zkconf/zkconf/internal/errlist"
	"github.com/zkconf/zkconf/internal/render"
	"github.com/zkconf/zkconf/internal/template"
	"github.com/zkconf/zkconf/zkclient"
)

// EnvPrefix is the prefix of environment variables overriding config keys.
const EnvPrefix = "CONFAGENT"

// StagedEnv is the environment variable through which a check command
// finds the staged file or directory (the same path as {{.src}}).
const StagedEnv = "ZKCONF_STAGED"

// Defaults of optional keys.
const (
	DefaultSessionTimeout = 10 * time.Second
	DefaultRoot           = "/config"
	DefaultMeta           = "/zkconf"
	DefaultStateDir       = "/var/lib/confagent"
	DefaultHTTPListen     = "127.0.0.1:9464"
	DefaultStaleAfter     = 60 * time.Second
	DefaultResyncInterval = 10 * time.Minute
	DefaultResyncJitter   = 5 * time.Second
	DefaultMode           = os.FileMode(0o640)
	DefaultTimeout        = 30 * time.Second
	// DefaultRenderTimeout and DefaultRenderSteps are the render budget
	// of template targets (keys render_timeout and render_steps).
	DefaultRenderTimeout       = template.DefaultTimeout
	DefaultRenderSteps   int64 = template.DefaultMaxSteps
)

// DefaultGracePeriod is how long a dir target keeps its previous
// generation directory after a swap (key grace_period): readers that
// resolved "..data" just before the swap find every file of their set if
// they open them within it.
const DefaultGracePeriod = 5 * time.Second

// TargetType is the kind of output a target produces.
type TargetType string

const (
	// TargetFile writes one item verbatim to a file.
	TargetFile TargetType = "file"
	// TargetDir writes the matching items as files of a directory that is
	// swapped atomically (see render.DirWriter).
	TargetDir TargetType = "dir"
	// TargetTemplate renders a text/template to a file.
	TargetTemplate TargetType = "template"
)

// Template syntaxes (key syntax of template targets).
const (
	// SyntaxGo is zkconf's template helpers over the items (the default).
	SyntaxGo = "go"
	// SyntaxConfd is confd's template functions over the items seen as
	// confd's key tree (agent.SyntaxConfd).
	SyntaxConfd = "confd"
)

// LogFormat is the log output format.
type LogFormat string

const (
	// LogText is slog's key=value text format.
	LogText LogFormat = "text"
	// LogJSON is one JSON object per line.
	LogJSON LogFormat = "json"
)

// DefaultRootName is the name of the one root of a configuration that
// sets the key root (or neither root nor roots): targets name it with
// root: default, templates with item "default" "x".
const DefaultRootName = "default"

// Root is one config root the agent follows (key roots: name → path, or
// name → {path, auth_file}).
type Root struct {
	// Name is the root's name in the configuration (lower case: keys are
	// case-insensitive), in logs, metrics and the state directory.
	Name string
	// Path is the ZooKeeper path the root is published under.
	Path string
	// AuthFile, when set, holds the digest identity ("user:password")
	// this root's nodes are readable by, added to the agent's one
	// session beside zookeeper.auth_file's.
	AuthFile string
	// key is the configuration key of Path in messages ("root" for the
	// root of key root).
	key string
}

// Config is confagent's configuration. Load fills it from a file; a Config
// built in code must be passed to Validate before use.
type Config struct {
	ZooKeeper ZooKeeper
	// Root is the ZooKeeper path under which config sets are published
	// when the agent follows one root (key root, or roots with one
	// entry); empty with several roots (see Roots).
	Root string
	// Roots are the roots the agent follows, in name order: the key roots,
	// or one root named DefaultRootName at Root. Load sets it; a Config
	// built in code may leave it nil for the one root Root.
	Roots []Root
	// Meta is the ZooKeeper path of zkconf's own bookkeeping (agent
	// registrations, generation pointers).
	Meta string
	// StateDir holds the agent's local cache and state; it lets the agent
	// render the last verified generation while ZooKeeper is unreachable.
	StateDir string
	// AgentID identifies this agent in ZooKeeper; defaults to the hostname.
	AgentID string
	HTTP    HTTP
	Status  Status
	Log     Log
	// Apply is the cross-target apply policy (key apply: "all", the
	// default, or "independent").
	Apply ApplyMode
	// StaleAfter is how long the agent may be disconnected from ZooKeeper
	// before /readyz fails.
	StaleAfter time.Duration
	// ResyncInterval is the period of full re-reads that catch anything
	// the watches missed; ResyncJitter spreads them so that agents do not
	// hit ZooKeeper as a herd.
	ResyncInterval time.Duration
	ResyncJitter   time.Duration
	// Incarnation is what the agent does when the root is published anew
	// on a ZooKeeper wiped or rebuilt (a new incarnation): "follow" (the
	// default; also "" in a Config built in code) or "refuse" (keep the last good config until `confagent
	// adopt`).
	Incarnation string
	// MemoryLimit is the soft memory limit of the Go runtime: in bytes,
	// or MemoryLimitAuto (key memory_limit: "auto", the default: sized
	// from the applied config set) or MemoryLimitOff ("off").
	// GOMEMLIMIT in the environment takes precedence.
	MemoryLimit int64
	Targets     []Target
	// Labels describe the agent (key labels; Kubernetes label syntax;
	// keys are lowercased like every configuration key). The agent adds
	// "hostname" unless set, and reports them in its status and registry
	// nodes.
	Labels map[string]string
	// Wait coalesces bursts of publishes (key wait: {min, max}; off by
	// default): see Wait.
	Wait Wait
	// ReloadSplay (key reload_splay; 0, the default, is off) delays every
	// reload after a new output by a random duration in [0, ReloadSplay),
	// so that a fleet does not reload in the same second.
	ReloadSplay time.Duration
	// RenderTimeout and RenderSteps (keys render_timeout and
	// render_steps) are the render budget of every template target that
	// does not set its own: how long one render may run, and how many
	// steps (range iterations and template calls) it may take. A render
	// over budget is rejected like any template error.
	RenderTimeout time.Duration
	RenderSteps   int64
	// Exec configures confagent exec (key exec): see Exec.
	Exec Exec
	// ConfdDir (key confd_dir) is a confd configuration directory whose
	// template resources (conf.d/*.toml, templates in templates/) Load
	// adds to Targets as template targets of syntax confd, after the
	// others; ConfdPrefix (key confd_prefix) is the -prefix confd ran
	// with, which replaces every resource's prefix (confd.go).
	ConfdDir, ConfdPrefix string
	// Warnings are what Load took as it is but an operator should look
	// at twice (a confd resource field confd ignored and zkconf honours,
	// say); check-config prints them.
	Warnings []string
	// File is the configuration file Load read (empty for a Config built
	// in code). Validate refuses any target that would write it.
	File string
}

// MinMemoryLimit is the smallest fixed memory_limit accepted: below it the
// agent's own fixed heap would keep the collector running constantly.
const MinMemoryLimit = 8 << 20

// ZooKeeper holds the connection settings.
type ZooKeeper struct {
	// Servers are host:port pairs.
	Servers []string
	// SessionTimeout is requested from the servers, which clamp it.
	SessionTimeout time.Duration
	// AuthFile, if set, is a file holding digest credentials
	// ("user:password"), readable by its owner only. Without it,
	// $ZKCONF_AUTH is used when set.
	AuthFile string
	// TLS, when its CA file is set, makes every connection use TLS
	// (ZooKeeper's secureClientPort).
	TLS zkclient.TLSFiles
}

// HTTP holds the status endpoint settings.
type HTTP struct {
	// Listen is the address of /healthz, /readyz and /metrics; empty
	// disables the endpoint.
	Listen string
	// AllowedHosts are names the endpoint answers to besides IP
	// addresses, localhost, the hostname and Listen's host (key
	// http.allowed_hosts; ".example.com" for a domain and the names below
	// it): a request for any other Host is refused (DNS rebinding).
	AllowedHosts []string
}

// Status holds what the agent reports about itself.
type Status struct {
	// CommandOutput lets the last line of a failing check or reload
	// command's output into the status node and into /status and /readyz
	// answered beyond loopback (key status.command_output; off by
	// default: the output stays in the log and on loopback).
	CommandOutput bool
}

// Log holds logging settings.
type Log struct {
	Level  slog.Level
	Format LogFormat
}

// ApplyMode is the cross-target apply policy: agent.ApplyMode's values,
// which confagent converts it to (this package does not link the agent:
// confpush reads agent configurations too).
type ApplyMode string

// Apply modes (agent.ApplyAll, agent.ApplyIndependent).
const (
	ApplyAll         ApplyMode = "all"
	ApplyIndependent ApplyMode = "independent"
)

// Memory limit settings (Config.MemoryLimit): agent.MemoryLimitOff and
// agent.MemoryLimitAuto's values.
const (
	MemoryLimitOff  int64 = 0
	MemoryLimitAuto int64 = -1
)

// Target is one output of the agent.
type Target struct {
	// Name identifies the target in logs, metrics and state; unique.
	Name string
	Type TargetType
	// Dest is the absolute path written (a file, or a directory for dir).
	Dest string
	// Src is the template file (template targets only; a dir target's
	// key src is SrcDir).
	Src string
	// SrcDir is a dir target's src: the directory of the items it
	// renders ("conf.d/"), whose path is stripped from their file names
	// (key src, dir targets only; empty: every item).
	SrcDir string
	// DirMode is the mode of the sub-directories a dir target creates
	// for item paths (key dir_mode, dir targets only; 0 means 0755).
	DirMode os.FileMode
	// Item is the item written verbatim (file targets only).
	Item string
	// Items are path.Match globs selecting items by their path (below
	// SrcDir), a "*" never matching "/" (dir targets only; nil selects
	// every item).
	Items []string
	// Mode is the permission of written files.
	Mode os.FileMode
	// Owner and Group as configured (names or numeric ids), and the
	// numeric ids Validate resolved them to (-1 when not set).
	Owner, Group string
	UID, GID     int
	// Check is a shell command run against the staged output before it
	// replaces the current one; {{.src}} expands to the staged path (see
	// CheckCommand), which is also in $ZKCONF_STAGED.
	Check string
	// Reload is a shell command run after the output changed.
	Reload string
	// Timeout bounds each Check and Reload run.
	Timeout time.Duration
	// FollowSymlink allows Dest to be a symlink whose target is replaced.
	FollowSymlink bool
	// GracePeriod is how long a dir target keeps the previous generation
	// directory after a swap (key grace_period, dir targets only; 0
	// removes it at once).
	GracePeriod time.Duration
	// RenderTimeout and RenderSteps are the template's render budget
	// (keys render_timeout and render_steps, template targets only;
	// Config's when not set).
	RenderTimeout time.Duration
	RenderSteps   int64
	// MissingKey is what the template does with a map key the map does
	// not have (key missing_key, template targets only): "error" (the
	// default) or "zero" (template.MissingKey).
	MissingKey string
	// Template is Src parsed with the render helpers; set by Validate
	// (nil for syntax confd).
	Template *template.Template

	// Syntax is a template target's template language (key syntax):
	// "go" (the default, also "") or "confd" (SyntaxConfd). Prefix and
	// Keys (keys prefix and keys, syntax confd only) select the keys a
	// confd template sees, as a confd template resource's do; Prefix is
	// a ZooKeeper path (default: the root, Keys ["/"]).
	Syntax string
	Prefix string
	Keys   []string
	// Root is the name of the root the target renders (key root;
	// required with several roots, the only one otherwise). Roots are the
	// other roots a template target reads (key roots: item "common"
	// "db.json"): it renders only combinations of generations that were
	// live together (a cut).
	Root  string
	Roots []string
	// Origin is the confd template resource a target was made from
	// (confd_dir), relative to confd_dir ("conf.d/nginx.toml"); its
	// problems are reported under "confd_dir[ORIGIN]". Empty for the
	// targets of the key targets.
	Origin string
}

// FileOptions returns the render options for writing this target.
func (t *Target) FileOptions() render.FileOptions {
	return render.FileOptions{Mode: t.Mode, UID: t.UID, GID: t.GID, FollowSymlink: t.FollowSymlink}
}

// MatchItem reports whether the item name belongs to this target: the item
// of a file target, any item below a dir target's SrcDir whose path below
// it matches one of its globs (every one without globs). Template
// targets read whatever their template asks for and match nothing here.
func (t *Target) MatchItem(name string) bool {
	switch t.Type {
	case TargetFile:
		return name == t.Item
	case TargetDir:
		rel, ok := strings.CutPrefix(name, t.SrcDir)
		if !ok {
			return false
		}
		if t.Items == nil {
			return true
		}
		for _, g := range t.Items {
			if ok, _ := path.Match(g, rel); ok {
				return true
			}
		}
	}
	return false
}

// CheckCommand returns Check with {{.src}} replaced by the shell-quoted
// staged path. Do not quote {{.src}} in the configuration: the expansion is
// already quoted. It returns "" if the target has no check.
func (t *Target) CheckCommand(staged string) (string, error) {
	if t.Check == "" {
		return "", nil
	}
	return expandCheck(t.Check, shellQuote(staged))
}

// expandCheck executes a check command template with src.
func expandCheck(check, src string) (string, error) {
	tmpl, err := texttemplate.New("check").Option("missingkey=error").Parse(check)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := tmpl.Execute(&b, map[string]string{"src": src}); err != nil {
		return "", err
	}
	return b.String(), nil
}

// shellQuote quotes s for POSIX sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// FieldError is one configuration problem, tied to the key it concerns.
// Load and Validate return an error prefixed "config: " that wraps
// (errors.As) a *multierror.Error whose Errors are *FieldError values.
type FieldError struct {
	// Key is the offending key, like "zookeeper.servers" or "targets[2].dest".
	Key string
	// Err describes the problem.
	Err error
	// Env is the environment variable the value came from (it overrides
	// Key in the file), empty when the file or a default gave it.
	Env string
}

// Error returns "key: problem", or for a value from the environment
// "VARIABLE: problem (environment variable overriding key)": the file is
// not where to look.
func (e *FieldError) Error() string {
	if e.Env != "" {
		return e.Env + ": " + e.Err.Error() + " (environment variable overriding " + e.Key + ")"
	}
	return e.Key + ": " + e.Err.Error()
}

// Unwrap returns the underlying problem.
func (e *FieldError) Unwrap() error { return e.Err }

// problems collects FieldErrors and remembers which keys already have one,
// so that a value that failed to decode is not reported again by the
// semantic checks with a confusing second message.
type problems struct {
	errs []error
	keys map[string]bool
}

func newProblems() *problems { return &problems{keys: make(map[string]bool)} }

func (p *problems) add(key string, err error) {
	p.keys[key] = true
	p.errs = append(p.errs, &FieldError{Key: key, Err: err, Env: envOverride(key)})
}

func (p *problems) addf(key, format string, args ...any) {
	p.add(key, fmt.Errorf(format, args...))
}

func (p *problems) has(key string) bool { return p.keys[key] }

// err returns the collected problems, or nil, as a *multierror.Error
// (internal/errlist) behind the prefix "config: ". Problems are grouped so
// that everything about one target is listed together, in target order,
// after the problems of the other keys; within a group they keep the order
// in which they were found.
func (p *problems) err() error {
	if len(p.errs) == 0 {
		return nil
	}
	slices.SortStableFunc(p.errs, func(a, b error) int {
		return cmp.Compare(targetIndex(a), targetIndex(b))
	})
	return fmt.Errorf("config: %w", errlist.Join(p.errs...))
}

// targetIndex returns N for a problem about "targets[N]...", -1 for
// the other keys, and after every N for a confd resource's
// ("confd_dir[FILE]..."), which come after the targets of the file.
func targetIndex(err error) int {
	var fe *FieldError
	if !errors.As(err, &fe) {
		return -1
	}
	if strings.HasPrefix(fe.Key, "confd_dir[") {
		return math.MaxInt
	}
	rest, ok := strings.CutPrefix(fe.Key, "targets[")
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(rest[:max(0, strings.IndexByte(rest, ']'))])
	if err != nil {
		return -1
	}
	return n
}

// Load reads the YAML file at path, applies environment overrides and
// defaults, and validates the result (see Validate). Relative template
// src and zookeeper.auth_file paths are resolved against the directory of
// the file. All problems are reported together (a *multierror.Error of
// *FieldError, see FieldError); a file that cannot be read or is not YAML fails alone.
func Load(path string) (*Config, error) {
	return load(path, (*Config).validate)
}

// LoadForRender reads the file at path as Load does but checks only what
// rendering its targets needs: the file's keys and values, the targets
// (names, types, items, templates parsed with their missing_key) and the
// labels. What only holds on the host running the agent is not checked
// (the ZooKeeper servers, credentials and TLS files, owners and groups,
// state_dir, targets writing the agent's own files), so that a host's
// templates render anywhere: confagent render, confpush publish
// --render-with. Owners and groups are left unresolved (UID and GID -1).
func LoadForRender(path string) (*Config, error) {
	return load(path, func(c *Config, p *problems) { c.validateTargets(p, false) })
}

// load reads, decodes and checks the file with validate.
func load(path string, validate func(*Config, *problems)) (*Config, error) {
	v := viper.New()
	v.SetConfigFile(path)
	v.SetConfigType("yaml")
	v.SetEnvPrefix(EnvPrefix)
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()
	// A variable that is set but empty is an intentional override (e.g.
	// CONFAGENT_HTTP_LISTEN= disables the endpoint), not "unset".
	v.AllowEmptyEnv(true)
	setDefaults(v)
	if err := v.ReadInConfig(); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			// "open PATH: …" names the file already.
			return nil, fmt.Errorf("config: read: %w", err)
		}
		return nil, fmt.Errorf("config: read %s: %w", path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("config: %s: %w", path, err)
	}
	p := newProblems()
	c := decode(v, filepath.Dir(abs), p)
	c.File = abs
	validate(c, p)
	if err := p.err(); err != nil {
		return nil, err
	}
	return c, nil
}

func setDefaults(v *viper.Viper) {
	v.SetDefault("zookeeper.session_timeout", DefaultSessionTimeout.String())
	v.SetDefault("root", DefaultRoot)
	v.SetDefault("meta", DefaultMeta)
	v.SetDefault("state_dir", DefaultStateDir)
	v.SetDefault("http.listen", DefaultHTTPListen)
	v.SetDefault("log.level", "info")
	v.SetDefault("log.format", string(LogText))
	v.SetDefault("apply", string(ApplyAll))
	v.SetDefault("stale_after", DefaultStaleAfter.String())
	v.SetDefault("resync_interval", DefaultResyncInterval.String())
	v.SetDefault("resync_jitter", DefaultResyncJitter.String())
	v.SetDefault("memory_limit", "auto")
	v.SetDefault("incarnation", "follow")
	v.SetDefault("render_timeout", DefaultRenderTimeout.String())
	v.SetDefault("render_steps", DefaultRenderSteps)
	// agent_id defaults to the hostname, looked up in decode so that a
	// failing lookup becomes a reported problem.
}

// errRequired is the message of every missing required key.
var errRequired = errors.New("required")
