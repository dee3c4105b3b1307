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

// BuildCommand builds the zkconf command name (confagent, confpush) into
// the file out, the way Build builds confagent.
func BuildCommand(ctx context.Context, name, out string) error {
	return buildIn(ctx, "github.com/zkconf/zkconf", "./cmd/"+name, out)
}

// BuildTool builds the tools module's command name (tools/cmd/NAME) into
// the file out, in the tools module's directory.
func BuildTool(ctx context.Context, name, out string) error {
	return buildIn(ctx, "github.com/zkconf/zkconf/tools", "./cmd/"+name, out)
}

// buildIn builds pkg of module (found from the current directory) into
// out, inside the module's own directory.
func buildIn(ctx context.Context, module, pkg, out string) error {
	out, err := filepath.Abs(out) // the build runs in another directory
	if err != nil {
		return fmt.Errorf("build %s: %w", pkg, err)
	}
	var stderr bytes.Buffer
	list := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", module)
	list.Stderr = &stderr
	dir, err := list.Output()
	if err != nil {
		return fmt.Errorf("find the module %s (run inside zkconf or its tools module): %w\n%s", module, err, stderr.Bytes())
	}
	build := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	build.Dir = strings.TrimSpace(string(dir))
	if msg, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s in %s: %w\n%s", pkg, build.Dir, err, msg)
	}
	return nil
}
