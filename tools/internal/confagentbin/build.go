// Package confagentbin builds the confagent binary the harnesses drive.
package confagentbin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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
//
// The binary is linked once into a cache directory and copied to out from
// there. Linking confagent or confpush costs several CPU-seconds, and the
// harnesses' tests build the same commands test after test and package
// after package; the go command relinks the cached binary only when its
// build ID (a hash of every input: sources, flags, toolchain, environment)
// no longer matches, so a changed source is always rebuilt. A lock file
// serialises builders of the same binary (tests of other packages, make
// chaos beside them); without a usable cache directory it builds into out
// directly.
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
	modDir := strings.TrimSpace(string(dir))
	base, err := os.UserCacheDir()
	if err != nil {
		return goBuild(ctx, modDir, pkg, out)
	}
	return buildCached(ctx, filepath.Join(base, "zkconf-harness-bin"), modDir, pkg, out)
}

// buildCached builds pkg of the module in modDir into out (absolute)
// through the cache directory cache.
func buildCached(ctx context.Context, cache, modDir, pkg, out string) error {
	cached, unlock, err := lockCached(cache, modDir, pkg)
	if err != nil {
		return goBuild(ctx, modDir, pkg, out)
	}
	defer unlock()
	if err := goBuild(ctx, modDir, pkg, cached); err != nil {
		return err
	}
	if err := copyExecutable(cached, out); err != nil {
		return fmt.Errorf("build %s: %w", pkg, err)
	}
	return nil
}

// goBuild links pkg static (CGO_ENABLED=0), as make deb and the container
// image ship it: a dynamically linked Go binary spends milliseconds in the
// dynamic loader and libc's start-up before main (confpush --version:
// 26.9 ms elapsed dynamic, 19.9 static, on the benchmark machine), and
// the benchmarks time the programs operators run.
func goBuild(ctx context.Context, modDir, pkg, out string) error {
	build := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	build.Dir = modDir
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s in %s: %w\n%s", pkg, build.Dir, err, msg)
	}
	return nil
}

// lockCached returns the path in cache of the binary of pkg of the module
// in modDir (one directory per module directory, so that two checkouts do
// not relink each other's binaries) and takes its lock.
func lockCached(cache, modDir, pkg string) (path string, unlock func(), err error) {
	sum := sha256.Sum256([]byte(modDir))
	dir := filepath.Join(cache, hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	name := strings.Trim(strings.ReplaceAll(filepath.ToSlash(pkg), "/", "_"), "._")
	if name == "" {
		name = "main"
	}
	lock, err := os.OpenFile(filepath.Join(dir, name+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		lock.Close()
		return "", nil, err
	}
	return filepath.Join(dir, name), func() { lock.Close() }, nil
}

// copyExecutable copies src to dst through a temporary file renamed into
// place, so that dst is never seen half written.
func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}
