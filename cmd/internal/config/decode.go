package config

import (
	"fmt"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/viper"
	"github.com/zkconf/zkconf/zkclient"
)

// topKeys are the valid flattened keys outside targets; sections are the
// keys that must hold a mapping.
var (
	topKeys = []string{
		"zookeeper.servers", "zookeeper.session_timeout", "zookeeper.auth_file",
		"zookeeper.tls.ca_file", "zookeeper.tls.cert_file", "zookeeper.tls.key_file", "zookeeper.tls.server_name",
		"root", "roots", "meta", "state_dir", "agent_id",
		"http.listen", "http.allowed_hosts", "status.command_output", "log.level", "log.format",
		"apply", "stale_after", "resync_interval", "resync_jitter",
		"memory_limit", "incarnation", "targets", "labels",
		"wait.min", "wait.max", "reload_splay",
		"render_timeout", "render_steps", "confd_dir", "confd_prefix",
		"exec.reload_signal", "exec.restart", "exec.kill_signal", "exec.kill_timeout", "exec.targets",
	}
	sections   = []string{"zookeeper", "zookeeper.tls", "http", "status", "log", "wait", "exec"}
	targetKeys = []string{
		"name", "type", "dest", "src", "item", "items", "mode", "owner", "group",
		"check", "reload", "timeout", "follow_symlink", "grace_period", "dir_mode",
		"render_timeout", "render_steps", "missing_key", "syntax", "prefix", "keys",
		"root", "roots",
	}
	rootKeys = []string{"path", "auth_file"}
)

// decode turns viper's raw values into a Config, reporting type and syntax
// problems (unknown keys, bad durations, bad modes...) into p. Semantic
// checks are left to validate.
func decode(v *viper.Viper, baseDir string, p *problems) *Config {
	checkUnknownKeys(v.AllKeys(), p)
	d := decoder{v: v, p: p}
	c := &Config{
		ZooKeeper: ZooKeeper{
			Servers:        d.stringList("zookeeper.servers"),
			SessionTimeout: d.duration("zookeeper.session_timeout"),
			AuthFile:       resolvePath(baseDir, d.string("zookeeper.auth_file")),
			TLS: zkclient.TLSFiles{
				CAFile:     resolvePath(baseDir, d.string("zookeeper.tls.ca_file")),
				CertFile:   resolvePath(baseDir, d.string("zookeeper.tls.cert_file")),
				KeyFile:    resolvePath(baseDir, d.string("zookeeper.tls.key_file")),
				ServerName: d.string("zookeeper.tls.server_name"),
			},
		},
		Root:           d.string("root"),
		Meta:           d.string("meta"),
		StateDir:       d.string("state_dir"),
		AgentID:        d.string("agent_id"),
		HTTP:           HTTP{Listen: d.string("http.listen"), AllowedHosts: d.stringList("http.allowed_hosts")},
		Status:         Status{CommandOutput: d.bool("status.command_output")},
		Apply:          ApplyMode(d.string("apply")),
		StaleAfter:     d.duration("stale_after"),
		ResyncInterval: d.duration("resync_interval"),
		ResyncJitter:   d.duration("resync_jitter"),
		MemoryLimit:    d.memoryLimit("memory_limit"),
		Incarnation:    d.string("incarnation"),
	}
	if c.AgentID == "" && !p.has("agent_id") {
		host, err := os.Hostname()
		if err != nil {
			p.addf("agent_id", "not set and the hostname is unavailable: %w", err)
		}
		c.AgentID = host
	}
	c.Log.Format = LogFormat(d.string("log.format"))
	if lvl := d.string("log.level"); lvl != "" {
		if l, ok := parseLevel(lvl); ok {
			c.Log.Level = l
		} else {
			p.addf("log.level", "unknown level %q: want debug, info, warn or error", lvl)
		}
	}
	// Both have defaults: a 0 was written so.
	c.RenderTimeout = d.duration("render_timeout")
	positive(p, "render_timeout", c.RenderTimeout)
	c.RenderSteps = d.count("render_steps")
	positiveCount(p, "render_steps", c.RenderSteps)
	c.Roots = decodeRoots(v.Get("roots"), baseDir, p)
	switch {
	case c.Roots == nil && !p.has("roots"):
		c.Roots = []Root{{Name: DefaultRootName, Path: c.Root, key: "root"}}
	case v.InConfig("root") || envOverride("root") != "":
		p.addf("roots", "root and roots are exclusive: name the one root in roots, or use root alone")
	case len(c.Roots) == 1:
		c.Root = c.Roots[0].Path
	default:
		c.Root = ""
	}
	c.Targets = decodeTargets(v.Get("targets"), baseDir, p, c)
	c.ConfdDir, c.ConfdPrefix = resolvePath(baseDir, d.string("confd_dir")), d.string("confd_prefix")
	if c.ConfdDir != "" && !p.has("confd_dir") {
		c.Targets = append(c.Targets, c.confdTargets(p)...)
	}
	c.Labels = decodeLabels(v.Get("labels"), p)
	c.Wait, c.ReloadSplay = Wait{Min: d.duration("wait.min"), Max: d.duration("wait.max")}, d.duration("reload_splay")
	c.Exec = decodeExec(d)
	return c
}

func parseLevel(s string) (slog.Level, bool) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, true
	case "info":
		return slog.LevelInfo, true
	case "warn", "warning":
		return slog.LevelWarn, true
	case "error":
		return slog.LevelError, true
	}
	return 0, false
}

// checkUnknownKeys reports keys that are not part of the documented
// interface: a typo like "taregts" must fail loudly instead of silently
// leaving the agent without targets.
func checkUnknownKeys(keys []string, p *problems) {
	slices.Sort(keys)
	for _, k := range keys {
		// A root's keys are checked by decodeRoots.
		if slices.Contains(topKeys, k) || strings.HasPrefix(k, "labels.") || strings.HasPrefix(k, "roots.") {
			continue
		}
		if slices.Contains(sections, k) {
			p.addf(k, "must be a mapping")
			continue
		}
		p.add(k, unknownKey(k, topKeys))
	}
}

// unknownKey builds an "unknown key" error with a suggestion when a known
// key is within a small edit distance.
func unknownKey(key string, known []string) error {
	if best := Suggest(key, known); best != "" {
		return fmt.Errorf("unknown key (did you mean %q?)", best)
	}
	return fmt.Errorf("unknown key")
}

// Suggest returns the known key closest to key when it is within a small
// edit distance (a typo), or "": the "did you mean" of unknown keys, shared
// by every tool that reads a configuration file.
func Suggest(key string, known []string) string {
	best, bestDist := "", 3
	for _, k := range known {
		if d := editDistance(key, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// decoder reads typed values for keys, reporting bad types into p. Values
// come either from viper (top-level keys) or from a target's map.
type decoder struct {
	v      *viper.Viper
	m      map[string]any // when decoding a target
	prefix string         // "targets[i]." when decoding a target
	p      *problems
}

func (d decoder) raw(key string) any {
	if d.m != nil {
		return d.m[key]
	}
	return d.v.Get(key)
}

func (d decoder) full(key string) string { return d.prefix + key }

// string accepts any scalar: YAML turns "agent_id: 1234" into an int and
// "owner: 0" into an int, which are meant as strings.
func (d decoder) string(key string) string {
	switch t := d.raw(key).(type) {
	case nil:
		return ""
	case string:
		return t
	case int, int64, uint64, float64, bool:
		return fmt.Sprint(t)
	default:
		d.p.addf(d.full(key), "must be a string, got %s", kind(t))
		return ""
	}
}

// duration accepts Go duration strings; a bare number is rejected (except
// 0) because its unit would be a guess.
func (d decoder) duration(key string) time.Duration {
	switch t := d.raw(key).(type) {
	case nil:
		return 0
	case string:
		dur, err := time.ParseDuration(strings.TrimSpace(t))
		if err != nil {
			d.p.addf(d.full(key), "invalid duration %q: use a number with a unit, like \"10s\" or \"1m30s\"", t)
			return 0
		}
		return dur
	case int, int64, uint64, float64:
		if fmt.Sprint(t) == "0" {
			return 0
		}
		d.p.addf(d.full(key), "invalid duration %v: a unit is required, like \"%vs\"", t, t)
		return 0
	default:
		d.p.addf(d.full(key), "must be a duration like \"10s\", got %s", kind(t))
		return 0
	}
}

// memoryLimit accepts "auto", "off" or a size in bytes with an optional
// unit: B, KiB, MiB, GiB, TiB (GOMEMLIMIT's syntax) or KB, MB, GB, TB
// (decimal).
func (d decoder) memoryLimit(key string) int64 {
	s := strings.TrimSpace(d.string(key))
	switch strings.ToLower(s) {
	case "", "auto":
		return MemoryLimitAuto
	case "off":
		return MemoryLimitOff
	}
	n, err := parseSize(s)
	if err != nil {
		d.p.addf(d.full(key), "invalid memory limit %q: want auto, off or a size like \"64MiB\"", s)
		return MemoryLimitAuto
	}
	return n
}

// parseSize parses a positive size like "64MiB", "100MB" or "1048576".
func parseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
	}
	mult := int64(1)
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(num), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, err
	}
	if n <= 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("size out of range")
	}
	return n * mult, nil
}

// count accepts a whole number, written plainly or with _ between digits
// ("10_000_000"); 0 when the key is not set.
func (d decoder) count(key string) int64 {
	switch t := d.raw(key).(type) {
	case nil:
		return 0
	case int:
		return int64(t)
	case int64:
		return t
	case uint64:
		if t > math.MaxInt64 {
			d.p.addf(d.full(key), "%d is too large", t)
			return 0
		}
		return int64(t)
	case float64:
		if t != math.Trunc(t) || math.Abs(t) >= math.MaxInt64 {
			d.p.addf(d.full(key), "must be a whole number, got %v", t)
			return 0
		}
		return int64(t)
	case string:
		s := strings.TrimSpace(t)
		n, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 10, 64)
		if err != nil || strings.HasPrefix(s, "_") || strings.HasSuffix(s, "_") || strings.Contains(s, "__") {
			d.p.addf(d.full(key), "invalid number %q: want a whole number like 10000000", t)
			return 0
		}
		return n
	default:
		d.p.addf(d.full(key), "must be a whole number, got %s", kind(t))
		return 0
	}
}

func (d decoder) bool(key string) bool {
	switch t := d.raw(key).(type) {
	case nil:
		return false
	case bool:
		return t
	case string:
		b, err := strconv.ParseBool(t)
		if err != nil {
			d.p.addf(d.full(key), "must be true or false, got %q", t)
		}
		return b
	default:
		d.p.addf(d.full(key), "must be true or false, got %s", kind(t))
		return false
	}
}

// stringList accepts a YAML list of scalars, or a comma-separated string
// (how lists arrive from the environment).
func (d decoder) stringList(key string) []string {
	switch t := d.raw(key).(type) {
	case nil:
		return nil
	case string:
		var out []string
		for s := range strings.SplitSeq(t, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out
	case []any:
		out := make([]string, 0, len(t))
		for i, e := range t {
			switch e := e.(type) {
			case string:
				out = append(out, e)
			case int, int64, uint64, float64, bool:
				out = append(out, fmt.Sprint(e))
			default:
				d.p.addf(fmt.Sprintf("%s[%d]", d.full(key), i), "must be a string, got %s", kind(e))
			}
		}
		return out
	default:
		d.p.addf(d.full(key), "must be a list, got %s", kind(t))
		return nil
	}
}

// modeRE and the name expressions (validate.go) compile at first use:
// confpush links this package, and initialisation runs at every start.
var modeRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:0o)?[0-7]{3,4}$`) })

// mode accepts only quoted octal strings: YAML reads an unquoted 0640 as
// octal 416 under YAML 1.1 rules but as decimal 640 under YAML 1.2 rules,
// and 640 decimal is mode 01200. Refusing numbers avoids guessing.
func (d decoder) mode(key string, def os.FileMode) os.FileMode {
	switch t := d.raw(key).(type) {
	case nil:
		return def
	case string:
		s := strings.TrimSpace(t)
		if !modeRE().MatchString(s) {
			d.p.addf(d.full(key), "invalid mode %q: want an octal string like \"0640\"", t)
			return def
		}
		m, _ := strconv.ParseUint(strings.TrimPrefix(s, "0o"), 8, 32) // cannot fail after the regexp
		return os.FileMode(m&0o777) | specialBits(m)                  // #nosec G115 -- m < 1<<12: parsed from at most 4 octal digits
	default:
		d.p.addf(d.full(key), "must be a quoted octal string like \"0640\" (an unquoted number is ambiguous in YAML), got %s", kind(t))
		return def
	}
}

// specialBits converts the octal setuid/setgid/sticky bits to os.FileMode.
func specialBits(m uint64) os.FileMode {
	var fm os.FileMode
	if m&0o4000 != 0 {
		fm |= os.ModeSetuid
	}
	if m&0o2000 != 0 {
		fm |= os.ModeSetgid
	}
	if m&0o1000 != 0 {
		fm |= os.ModeSticky
	}
	return fm
}

// decodeTargets decodes the targets; c gives the agent-wide defaults
// (render_timeout, render_steps).
func decodeTargets(raw any, baseDir string, p *problems, c *Config) []Target {
	if raw == nil {
		return nil
	}
	list, ok := raw.([]any)
	if !ok {
		p.addf("targets", "must be a list of targets, got %s", kind(raw))
		return nil
	}
	targets := make([]Target, 0, len(list))
	for i, e := range list {
		prefix := fmt.Sprintf("targets[%d]", i)
		m, ok := e.(map[string]any)
		if !ok {
			p.addf(prefix, "must be a mapping, got %s", kind(e))
			targets = append(targets, Target{})
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if !slices.Contains(targetKeys, k) {
				p.add(prefix+"."+k, unknownKey(k, targetKeys))
			}
		}
		d := decoder{m: m, prefix: prefix + ".", p: p}
		t := Target{
			Name:          d.string("name"),
			Type:          TargetType(d.string("type")),
			Dest:          d.string("dest"),
			Src:           d.string("src"),
			Item:          d.string("item"),
			Items:         d.stringList("items"),
			Mode:          d.mode("mode", DefaultMode),
			Owner:         d.string("owner"),
			Group:         d.string("group"),
			Check:         d.string("check"),
			Reload:        d.string("reload"),
			Timeout:       d.duration("timeout"),
			FollowSymlink: d.bool("follow_symlink"),
			GracePeriod:   d.duration("grace_period"),
			RenderTimeout: d.duration("render_timeout"),
			RenderSteps:   d.count("render_steps"),
			MissingKey:    d.string("missing_key"),
			DirMode:       d.mode("dir_mode", 0),
			Syntax:        d.string("syntax"),
			Prefix:        d.string("prefix"),
			Keys:          d.stringList("keys"),
			Root:          d.string("root"),
			Roots:         d.stringList("roots"),
		}
		// A dir target's src is the directory of the items it takes (an
		// item path prefix), a template target's its template file.
		if t.Type == TargetDir {
			t.SrcDir, t.Src = t.Src, ""
		} else {
			t.Src = resolvePath(baseDir, t.Src)
		}
		if _, set := m["keys"]; !set && t.Syntax == SyntaxConfd {
			t.Keys = []string{"/"}
		}
		// A template target's render budget is the agent-wide one unless
		// it sets its own.
		if _, set := m["render_timeout"]; set {
			positive(p, prefix+".render_timeout", t.RenderTimeout)
		} else if t.Type == TargetTemplate {
			t.RenderTimeout = c.RenderTimeout
		}
		if _, set := m["render_steps"]; set {
			positiveCount(p, prefix+".render_steps", t.RenderSteps)
		} else if t.Type == TargetTemplate {
			t.RenderSteps = c.RenderSteps
		}
		if _, set := m["timeout"]; !set {
			t.Timeout = DefaultTimeout
		}
		if _, set := m["grace_period"]; !set && t.Type == TargetDir {
			t.GracePeriod = DefaultGracePeriod
		}
		targets = append(targets, t)
	}
	return targets
}

// decodeRoots decodes the key roots: a mapping of name → ZooKeeper path,
// or name → {path, auth_file}. Nil when the key is not set.
func decodeRoots(raw any, baseDir string, p *problems) []Root {
	if raw == nil {
		return nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		p.addf("roots", "must be a mapping of root names to ZooKeeper paths, got %s", kind(raw))
		return nil
	}
	if len(m) == 0 {
		p.addf("roots", "names no root: omit the key for the one root of key root")
		return nil
	}
	roots := make([]Root, 0, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		key := "roots." + name
		r := Root{Name: name, key: key + ".path"}
		switch e := m[name].(type) {
		case string:
			r.Path, r.key = e, key
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(e)) {
				if !slices.Contains(rootKeys, k) {
					p.add(key+"."+k, unknownKey(k, rootKeys))
				}
			}
			d := decoder{m: e, prefix: key + ".", p: p}
			r.Path, r.AuthFile = d.string("path"), resolvePath(baseDir, d.string("auth_file"))
		default:
			r.key = key
			p.addf(key, "must be a ZooKeeper path or a mapping {path, auth_file}, got %s", kind(e))
		}
		roots = append(roots, r)
	}
	return roots
}

// resolvePath makes a relative path relative to the config file's
// directory, so that a config and its templates can move together.
func resolvePath(baseDir, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(baseDir, p)
}

// kind names a YAML value's type for messages.
func kind(v any) string {
	switch v.(type) {
	case nil:
		return "nothing"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int64, uint64, float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any, map[any]any:
		return "a mapping"
	}
	return fmt.Sprintf("%T", v)
}
