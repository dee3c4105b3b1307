package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/zkconf/zkconf/internal/buildinfo"
	"github.com/zkconf/zkconf/internal/clidoc"
)

// examples returns every command's Examples section, by command path without
// "confagent" ("" is the root). TestConfagentExamples fails for a command
// that has none: add its entry here.
func examples() map[string]string {
	return clidoc.WithCompletionExamples("confagent", map[string]string{
		"": `  # Run as a service (what the systemd unit does)
  confagent --config /etc/confagent/confagent.yaml
  # Render the current generation once and exit
  confagent --once
  # Show what would change, write nothing
  confagent --dry-run --log-level debug`,
		"check-config": `  confagent check-config --config /etc/confagent/confagent.yaml`,
		"adopt": `  # Follow the root's new incarnation after ZooKeeper was rebuilt
  confagent adopt
  confagent adopt --incarnation 6f1c0e2a9b8d4c3e5f7a1b2c3d4e5f60`,
		"render": `  # Render the set you are about to publish with this host's targets
  confagent render --from ./web-config
  # ... one target, with its check command, into a directory of your choice
  confagent render --from ./web-config --target nginx-upstreams --check --out /tmp/r`,
		"version": `  confagent version`,
	})
}

// conventions gives the command tree --version, the completion command and
// the examples. The reference (docs/cli, docs/man) is generated and checked
// by TestConfagentDocs from the tree command builds, not by a command of
// the binary: that would link cobra/doc and its markdown and man-page
// renderers into every agent, about 0.3 MB of code whose pages the kernel
// maps in around every page the agent touches.
func conventions(root *cobra.Command, stdout io.Writer) {
	root.Version = buildinfo.Get().String("confagent")
	root.SetVersionTemplate("{{.Version}}\n")
	root.InitDefaultVersionFlag()
	// The completion command writes its script to the output it finds
	// when it is made.
	root.SetOut(stdout)
	root.InitDefaultCompletionCmd()
	clidoc.SetExamples(root, examples())
}
