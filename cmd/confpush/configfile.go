package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/zkconf/zkconf/cmd/internal/config"
	"github.com/zkconf/zkconf/internal/errlist"
)

// fileKeys are the --config file's names for settings confagent's
// configuration has too, spelled as confagent spells them, and the flag
// each one sets. The flag names themselves (zk, session-timeout, ...) are
// still accepted in the file, as deprecated aliases.
var fileKeys = map[string]string{
	"zookeeper.servers":         "zk",
	"zookeeper.session_timeout": "session-timeout",
	"zookeeper.connect_timeout": "connect-timeout",
	"zookeeper.auth_file":       "auth-file",
	"zookeeper.tls.ca_file":     "tls-ca-file",
	"zookeeper.tls.cert_file":   "tls-cert-file",
	"zookeeper.tls.key_file":    "tls-key-file",
	"zookeeper.tls.server_name": "tls-server-name",
	"log.level":                 "log-level",
}

// filePaths are the file keys holding paths: relative ones are resolved
// against the configuration file's directory, as confagent does.
var filePaths = []string{"zookeeper.auth_file", "zookeeper.tls.ca_file", "zookeeper.tls.cert_file", "zookeeper.tls.key_file"}

// readConfigFile reads the YAML file at path into v's configuration layer
// (below flags and environment variables), under the flag names; flags
// are the names it may set (flagNames). It refuses unknown keys, reporting every problem at once with a suggestion
// for typos, and returns the deprecated aliases the file uses.
func readConfigFile(v *viper.Viper, flags []string, path string) (deprecated []string, err error) {
	fv := viper.New()
	fv.SetConfigFile(path)
	fv.SetConfigType("yaml")
	if err := fv.ReadInConfig(); err != nil {
		return nil, usagef("config file %s: %v", path, err)
	}
	aliasOf := map[string]string{}
	known := []string{}
	for k, f := range fileKeys {
		aliasOf[f] = k
		known = append(known, k)
	}
	for _, f := range flags {
		if aliasOf[f] == "" {
			known = append(known, f)
		}
	}
	slices.Sort(known)
	settings := map[string]any{}
	from := map[string]string{} // flag -> the key that set it
	var problems []error
	keys := fv.AllKeys()
	slices.Sort(keys)
	for _, k := range keys {
		flag, isNew := fileKeys[k]
		switch {
		case isNew:
		case slices.Contains(flags, k):
			flag = k
			if aliasOf[k] != "" {
				deprecated = append(deprecated, fmt.Sprintf("%s (use %s)", k, aliasOf[k]))
			}
		case k == "zookeeper" || k == "zookeeper.tls" || k == "log":
			problems = append(problems, fmt.Errorf("%s: must be a mapping", k))
			continue
		default:
			problems = append(problems, unknownFileKey(k, known, aliasOf))
			continue
		}
		if prev, dup := from[flag]; dup {
			problems = append(problems, fmt.Errorf("%s: the same setting as %s; give one", k, prev))
			continue
		}
		val, err := fileValue(fv.Get(k), k, path)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		from[flag] = k
		settings[flag] = val
	}
	if err := errlist.Join(problems...); err != nil {
		return nil, usagef("config file %s: %w", path, err)
	}
	if err := v.MergeConfigMap(settings); err != nil {
		return nil, usagef("config file %s: %v", path, err)
	}
	return deprecated, nil
}

// fileValue converts a file value to what the flag takes: a list of
// servers becomes "host:port,...", a relative path under a new key is
// resolved against the file's directory.
func fileValue(raw any, key, path string) (any, error) {
	// Other lists (init --agent-digest, ...) are the flags' own to parse.
	if list, ok := raw.([]any); ok && (key == "zookeeper.servers" || key == "zk") {
		parts := make([]string, len(list))
		for i, e := range list {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("%s[%d]: want a host:port string, got %T", key, i, e)
			}
			parts[i] = s
		}
		return strings.Join(parts, ","), nil
	}
	if s, ok := raw.(string); ok && s != "" && slices.Contains(filePaths, key) && !filepath.IsAbs(s) {
		return filepath.Join(filepath.Dir(path), s), nil
	}
	return raw, nil
}

// unknownFileKey is an unknown key's problem, suggesting the current name
// when the closest known key is a deprecated alias.
func unknownFileKey(key string, known []string, aliasOf map[string]string) error {
	candidates := append(slices.Clone(known), keysOf(aliasOf)...)
	best := config.Suggest(key, candidates)
	if n := aliasOf[best]; n != "" {
		best = n
	}
	if best != "" {
		return fmt.Errorf("%s: unknown key (did you mean %q?)", key, best)
	}
	return fmt.Errorf("%s: unknown key", key)
}

func keysOf(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// mergeNames is names with the ones of more it lacks appended.
func mergeNames(names, more []string) []string {
	for _, n := range more {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// flagNames lists the flag names of every command: a file shared by
// several commands may set flags of any of them, as it always could.
func flagNames(root *cobra.Command) []string {
	var names []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		add := func(f *pflag.Flag) {
			if !slices.Contains(names, f.Name) {
				names = append(names, f.Name)
			}
		}
		c.Flags().VisitAll(add)
		c.PersistentFlags().VisitAll(add)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return names
}
