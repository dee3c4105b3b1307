// Command confagent follows a zkconf config root in ZooKeeper and renders
// it into files atomically, with check and reload commands. See
// examples/agent/confagent.yaml for every option and docs/confagent.md for
// operations.
package main

import (
	"os"
)

func main() {
	os.Exit(runProgram(os.Args[1:], os.Stdout, os.Stderr, true))
}
