// Package confagentbin builds the confagent binary the harnesses drive.
package confagentbin

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// Build builds github.com/zkconf/zkconf/cmd/confagent into the file out.
//
// It builds inside the zkconf module's own directory, with that module's
// go.mod and go.sum: the tools module requires only what the harnesses
// import, not confagent's own dependencies (systemd, cobra), and the binary
// under test must be built as the product is. The directory is where the Go
// command resolves github.com/zkconf/zkconf from the current directory: the
// tools module's replace directive (../), or the zkconf module itself.
func Build(ctx context.Context, out string) error {
	return BuildCommand(ctx, "confagent", out)
}

// BuildCommand builds github.com/zkconf/zkconf/cmd/<name> into the file
// out, the way Build builds confagent.
func BuildCommand(ctx context.Context, name, out string) error {
	out, err := filepath.Abs(out) // the build runs in another directory
	if err != nil {
		return fmt.Errorf("build %s: %w", name, err)
	}
	var stderr bytes.Buffer
	list := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/zkconf/zkconf")
	list.Stderr = &stderr
	dir, err := list.Output()
	if err != nil {
		return fmt.Errorf("find the zkconf module (run inside zkconf or its tools module): %w\n%s", err, stderr.Bytes())
	}
	build := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/"+name)
	build.Dir = strings.TrimSpace(string(dir))
	if msg, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s in %s: %w\n%s", name, build.Dir, err, msg)
	}
	return nil
}
