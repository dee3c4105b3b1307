// Package clidoc keeps the command-line reference of zkconf's binaries in
// step with their commands: it sets and checks every command's examples.
// Package clidocgen generates the reference itself (docs/cli, docs/man)
// and compares committed copies with a fresh generation.
package clidoc

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// Regenerate is the one command that rewrites docs/cli and docs/man from
// the commands; the staleness tests print it.
const Regenerate = "make docs"

// UpdateEnv, set to 1, makes the staleness tests rewrite the committed
// reference instead of comparing it (what `make docs` does).
const UpdateEnv = "ZKCONF_UPDATE_DOCS"

// SetExamples sets each command's Example from examples, keyed by command
// path without the binary's name ("" for the root, "rollback", "completion
// bash"). Keeping every example of a binary in one table keeps them out of
// the command definitions. It returns the keys that name no command.
func SetExamples(root *cobra.Command, examples map[string]string) []string {
	used := map[string]bool{}
	Walk(root, func(c *cobra.Command) {
		key := Key(c)
		if ex, ok := examples[key]; ok {
			c.Example = strings.Trim(ex, "\n")
			used[key] = true
		}
	})
	var unknown []string
	for k := range examples {
		if !used[k] {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	return unknown
}

// MissingExamples lists the commands (by Key) that have no Example.
func MissingExamples(root *cobra.Command) []string {
	var missing []string
	Walk(root, func(c *cobra.Command) {
		if strings.TrimSpace(c.Example) == "" {
			missing = append(missing, fmt.Sprintf("%q", Key(c)))
		}
	})
	return missing
}

// Walk calls fn for root and every available command below it (hidden
// commands and cobra's help command are skipped).
func Walk(root *cobra.Command, fn func(*cobra.Command)) {
	fn(root)
	for _, c := range root.Commands() {
		if c.Hidden || c.Name() == "help" {
			continue
		}
		Walk(c, fn)
	}
}

// Key is a command's path without the binary's name.
func Key(c *cobra.Command) string {
	return strings.TrimPrefix(strings.TrimPrefix(c.CommandPath(), c.Root().Name()), " ")
}

// WithCompletionExamples adds the examples of cobra's completion command
// and its subcommands for binary name to examples, and returns it.
func WithCompletionExamples(name string, examples map[string]string) map[string]string {
	examples["completion"] = fmt.Sprintf("  %[1]s completion bash > /etc/bash_completion.d/%[1]s", name)
	examples["completion bash"] = fmt.Sprintf(`  # Current shell
  source <(%[1]s completion bash)
  # Every new shell (make install does this)
  %[1]s completion bash > /usr/local/share/bash-completion/completions/%[1]s`, name)
	examples["completion zsh"] = fmt.Sprintf(`  %[1]s completion zsh > "${fpath[1]}/_%[1]s"`, name)
	examples["completion fish"] = fmt.Sprintf("  %[1]s completion fish > ~/.config/fish/completions/%[1]s.fish", name)
	examples["completion powershell"] = fmt.Sprintf("  %s completion powershell | Out-String | Invoke-Expression", name)
	return examples
}
