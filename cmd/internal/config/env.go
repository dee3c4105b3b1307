package config

import (
	"os"
	"strings"
)

// EnvName is the environment variable that overrides key: EnvPrefix, an
// underscore, and key in upper case with dots replaced by underscores
// ("stale_after" -> CONFAGENT_STALE_AFTER).
func EnvName(key string) string {
	return EnvPrefix + "_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// envOverride returns the environment variable that set key, or "" when
// the file or a default did. Target keys ("targets[2].dest") have no
// variable. Load reads the environment through viper, which takes a set
// variable, even an empty one, over the file (AllowEmptyEnv).
func envOverride(key string) string {
	if strings.ContainsAny(key, "[") {
		return ""
	}
	name := EnvName(key)
	if _, ok := os.LookupEnv(name); ok {
		return name
	}
	return ""
}
