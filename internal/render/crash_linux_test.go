package render

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Environment of the helper process started by TestCrashSafety.
const (
	crashHelperEnv = "ZKCONF_RENDER_CRASH_HELPER" // "1" in the helper
	crashDirEnv    = "ZKCONF_RENDER_CRASH_DIR"    // DirWriter directory
	crashFileEnv   = "ZKCONF_RENDER_CRASH_FILE"   // WriteFile destination
	crashFlatEnv   = "ZKCONF_RENDER_CRASH_FLAT"   // DirWriter directory of a flat set, refilled
	crashStartEnv  = "ZKCONF_RENDER_CRASH_START"  // first generation to write
	crashSeedEnv   = "ZKCONF_CRASH_SEED"          // set to reproduce a run
)

// crashHelperLifetime bounds the helper even if every kill mechanism fails.
const crashHelperLifetime = 30 * time.Second

var crashOpts = FileOptions{Mode: 0o640, UID: -1, GID: -1}

// crashNames is the payload name set of generation gen: three fixed names
// plus one that rotates, so that every swap adds and removes a link, plus
// two whose content changes only every fourth generation, so that most
// swaps hard-link them from the previous set; and a tree: files in
// sub-directories two levels deep (one of them shared) and a
// sub-directory that rotates, so that swaps add and remove directories.
func crashNames(gen int64) []string {
	return []string{"a.conf", "b.conf", "c.conf", fmt.Sprintf("opt-%d.conf", gen%3), "shared-a.conf", "shared-b.conf",
		"sub/d.conf", "sub/deep/shared-e.conf", fmt.Sprintf("dir-%d/f.conf", gen%3)}
}

// contentGen is the generation whose content name has in generation gen.
func contentGen(gen int64, name string) int64 {
	if strings.HasPrefix(filepath.Base(name), "shared-") {
		return gen - gen%4
	}
	return gen
}

// crashContent builds self-verifying content: a header with the
// generation, a filler of varying size and a trailing checksum line.
func crashContent(gen int64, name string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "generation=%d name=%s\n", gen, name)
	filler := int((gen*7919 + int64(len(name))*104729) % 20000)
	for b.Len() < filler {
		fmt.Fprintf(&b, "line %d of generation %d\n", b.Len(), gen)
	}
	sum := sha256.Sum256(b.Bytes())
	fmt.Fprintf(&b, "sha256=%s\n", hex.EncodeToString(sum[:]))
	return b.Bytes()
}

// crashFlat is the flat set of generation gen: every file changes with
// every generation, so that each stage takes all its files from the
// pool that the Refill after the one before made.
func crashFlat(gen int64) map[string][]byte {
	m := make(map[string][]byte)
	for i := range 12 {
		n := fmt.Sprintf("flat-%02d.conf", i)
		m[n] = crashContent(gen, n)
	}
	return m
}

func crashGeneration(gen int64) map[string][]byte {
	m := make(map[string][]byte)
	for _, n := range crashNames(gen) {
		m[n] = crashContent(contentGen(gen, n), n)
	}
	return m
}

// verifyCrashContent checks a file produced by crashContent and returns its
// generation. An empty or truncated file fails.
func verifyCrashContent(data []byte, name string) (int64, error) {
	body, last, ok := cutLastLine(data)
	if !ok {
		return 0, fmt.Errorf("%s: no checksum line (%d bytes)", name, len(data))
	}
	want, ok := strings.CutPrefix(last, "sha256=")
	sum := sha256.Sum256(body)
	if !ok || want != hex.EncodeToString(sum[:]) {
		return 0, fmt.Errorf("%s: checksum mismatch (%d bytes): partial or corrupt file", name, len(data))
	}
	var gen int64
	var gotName string
	if _, err := fmt.Sscanf(string(body), "generation=%d name=%s\n", &gen, &gotName); err != nil || gotName != name {
		return 0, fmt.Errorf("%s: bad header (name %q): %v", name, gotName, err)
	}
	return gen, nil
}

func cutLastLine(data []byte) (body []byte, last string, ok bool) {
	if len(data) == 0 || data[len(data)-1] != '\n' {
		return nil, "", false
	}
	i := bytes.LastIndexByte(data[:len(data)-1], '\n')
	if i < 0 {
		return nil, "", false
	}
	return data[:i+1], string(data[i+1 : len(data)-1]), true
}

// TestHelperProcess is not a real test: TestCrashSafety runs the test
// binary with -test.run=TestHelperProcess and crashHelperEnv=1, and this
// then writes generations in a loop until it is SIGKILLed.
func TestHelperProcess(t *testing.T) {
	if os.Getenv(crashHelperEnv) != "1" {
		t.Skip("helper process for TestCrashSafety")
	}
	dir, file, flatDir := os.Getenv(crashDirEnv), os.Getenv(crashFileEnv), os.Getenv(crashFlatEnv)
	start, err := strconv.ParseInt(os.Getenv(crashStartEnv), 10, 64)
	if err != nil || dir == "" || file == "" || flatDir == "" {
		fmt.Fprintln(os.Stderr, "helper: bad environment")
		os.Exit(2)
	}
	w, flat := NewDirWriter(dir), NewDirWriter(flatDir)
	deadline := time.Now().Add(crashHelperLifetime)
	// The flat set is written in a loop of its own, write then Refill,
	// so that the kill finds it anywhere in that cycle: every write after
	// the first takes its files from the pool.
	flatReady := make(chan struct{})
	go func() {
		for gen := start; time.Now().Before(deadline); gen++ {
			if _, err := flat.Write(crashFlat(gen), crashOpts); err != nil {
				fmt.Fprintln(os.Stderr, "helper: DirWriter.Write (flat):", err)
				os.Exit(3)
			}
			if err := flat.Refill(); err != nil {
				fmt.Fprintln(os.Stderr, "helper: DirWriter.Refill:", err)
				os.Exit(3)
			}
			if gen == start+1 {
				close(flatReady)
			}
		}
	}()
	for gen := start; time.Now().Before(deadline); gen++ {
		if _, err := w.Write(crashGeneration(gen), crashOpts); err != nil {
			fmt.Fprintln(os.Stderr, "helper: DirWriter.Write:", err)
			os.Exit(3)
		}
		if _, err := WriteFile(file, crashContent(gen, "single.conf"), crashOpts); err != nil {
			fmt.Fprintln(os.Stderr, "helper: WriteFile:", err)
			os.Exit(4)
		}
		if gen == start {
			// Tell the parent the loops are running (the flat one past a
			// write from the pool); the kill comes next.
			<-flatReady
			fmt.Println("ready")
		}
	}
	os.Exit(0)
}

// TestCrashSafety SIGKILLs a writer at random moments and checks that what
// it leaves behind is always one complete set, and that writing resumes.
func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns 20 processes")
	}
	seed := time.Now().UnixNano()
	if s := os.Getenv(crashSeedEnv); s != "" {
		var err error
		if seed, err = strconv.ParseInt(s, 10, 64); err != nil {
			t.Fatalf("%s: %v", crashSeedEnv, err)
		}
	}
	t.Logf("seed %d (set %s=%d to reproduce)", seed, crashSeedEnv, seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0x7a6b636f6e66))

	root := t.TempDir()
	dir := filepath.Join(root, "set")
	file := filepath.Join(root, "single.conf")
	flatDir := filepath.Join(root, "flat")
	w := NewDirWriter(dir)
	if _, err := w.Write(crashGeneration(0), crashOpts); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteFile(file, crashContent(0, "single.conf"), crashOpts); err != nil {
		t.Fatal(err)
	}

	const rounds = 20
	for round := range rounds {
		// Each round writes its own range of generations, so a check can
		// tell which round produced what it sees.
		start := int64(round+1) * 1_000_000
		delay := time.Duration(rng.IntN(31)) * time.Millisecond
		runAndKill(t, round, start, delay, dir, file, flatDir)
		checkAfterCrash(t, round, dir, file)
		checkFlatAfterCrash(t, round, flatDir)
	}
}

// runAndKill starts the helper, waits for its first complete generation,
// sleeps delay and SIGKILLs it.
func runAndKill(t *testing.T, round int, start int64, delay time.Duration, dir, file, flatDir string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(),
		crashHelperEnv+"=1",
		crashDirEnv+"="+dir,
		crashFileEnv+"="+file,
		crashFlatEnv+"="+flatDir,
		crashStartEnv+"="+strconv.FormatInt(start, 10),
	)
	// If this test process dies, the kernel kills the helper too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("round %d: helper did not start: %q %v; stderr: %s", round, line, err, stderr.String())
	}
	time.Sleep(delay) // the random crash point
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("round %d: kill: %v", round, err)
	}
	_, _ = io.Copy(io.Discard, stdout)
	err = cmd.Wait()
	killed = true
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("round %d: helper was not killed by SIGKILL: %v; stderr: %s", round, err, stderr.String())
	}
	t.Logf("round %d: killed after %v", round, delay)
}

// checkAfterCrash verifies the state a killed writer left behind, then that
// a fresh write succeeds and cleans up.
func checkAfterCrash(t *testing.T, round int, dir, file string) {
	t.Helper()
	set, err := ReadCurrent(dir)
	if err != nil {
		t.Fatalf("round %d: ..data does not resolve to a readable set: %v", round, err)
	}
	gen, err := verifyCrashContent(set["a.conf"], "a.conf")
	if err != nil {
		t.Fatalf("round %d: via ..data: %v", round, err)
	}
	for name, data := range set {
		g, err := verifyCrashContent(data, name)
		if err != nil {
			t.Fatalf("round %d: via ..data: %v", round, err)
		}
		if g != contentGen(gen, name) {
			t.Fatalf("round %d: mixed set: %s has generation %d's content in generation %d", round, name, g, gen)
		}
	}
	if got, want := slices.Sorted(maps.Keys(set)), slices.Sorted(slices.Values(crashNames(gen))); !slices.Equal(got, want) {
		t.Fatalf("round %d: generation %d has files %v, want %v", round, gen, got, want)
	}
	// Every file reachable through a top-level link (a file, or a
	// directory of the tree) must be complete; a link may dangle (a name
	// the new generation dropped) or be missing (a name it added) if the
	// kill hit between swap and link update.
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") {
			continue
		}
		var files map[string][]byte
		if fi, err := os.Stat(filepath.Join(dir, e.Name())); errors.Is(err, os.ErrNotExist) {
			continue
		} else if err == nil && fi.IsDir() {
			sub, err := readGeneration(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			files = map[string][]byte{}
			for n, d := range sub {
				files[e.Name()+"/"+n] = d
			}
		} else {
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			files = map[string][]byte{e.Name(): data}
		}
		for name, data := range files {
			if g, err := verifyCrashContent(data, name); err != nil || g != contentGen(gen, name) {
				t.Fatalf("round %d: %s: generation %d (current %d): %v", round, name, g, gen, err)
			}
		}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("round %d: single file: %v", round, err)
	}
	if _, err := verifyCrashContent(data, "single.conf"); err != nil {
		t.Fatalf("round %d: single file: %v", round, err)
	}

	// Log what the kill left behind, as evidence of which windows the
	// random crash points hit.
	_, tmpErr := os.Lstat(filepath.Join(dir, DataTmpLink))
	t.Logf("round %d: generation %d visible; leftovers: %d generation dirs, ..data_tmp=%v, %d temp files",
		round, gen, len(generationDirs(t, dir)), tmpErr == nil, len(tempFiles(t, filepath.Dir(file))))

	// Recovery: stale temporaries go, the next writes succeed and leave a
	// clean directory.
	if _, err := RemoveStaleTemps(file, false); err != nil {
		t.Fatalf("round %d: RemoveStaleTemps: %v", round, err)
	}
	next := gen + 1
	if _, err := NewDirWriter(dir).Write(crashGeneration(next), crashOpts); err != nil {
		t.Fatalf("round %d: Write after crash: %v", round, err)
	}
	if _, err := WriteFile(file, crashContent(next, "single.conf"), crashOpts); err != nil {
		t.Fatalf("round %d: WriteFile after crash: %v", round, err)
	}
	assertTree(t, dir, crashGeneration(next), 0o755)
	if left := tempFiles(t, filepath.Dir(file)); len(left) > 0 {
		t.Fatalf("round %d: temporary files left: %v", round, left)
	}
}

// checkFlatAfterCrash verifies the flat set a killed writer left behind
// (every file of one generation, complete), whatever it left in PoolDir,
// then that a new DirWriter's write and Refill leave a pool of fresh
// files only.
func checkFlatAfterCrash(t *testing.T, round int, dir string) {
	t.Helper()
	set, err := ReadCurrent(dir)
	if err != nil {
		t.Fatalf("round %d: flat: ..data does not resolve to a readable set: %v", round, err)
	}
	gen, err := verifyCrashContent(set["flat-00.conf"], "flat-00.conf")
	if err != nil {
		t.Fatalf("round %d: flat: %v", round, err)
	}
	for name, data := range set {
		if g, err := verifyCrashContent(data, name); err != nil || g != gen {
			t.Fatalf("round %d: flat: %s: generation %d in generation %d's set: %v", round, name, g, gen, err)
		}
	}
	if got, want := slices.Sorted(maps.Keys(set)), slices.Sorted(maps.Keys(crashFlat(gen))); !slices.Equal(got, want) {
		t.Fatalf("round %d: flat: generation %d has files %v, want %v", round, gen, got, want)
	}
	taken := 0
	pool := poolEntries(t, dir)
	for _, st := range pool {
		if st.Nlink > 1 {
			taken++
		}
	}
	t.Logf("round %d: flat: generation %d visible; %d entries in %s, %d of them linked into a generation", round, gen, len(pool), PoolDir, taken)
	w := NewDirWriter(dir)
	next := crashFlat(gen + 1)
	if _, err := w.Write(next, crashOpts); err != nil {
		t.Fatalf("round %d: flat: Write after crash: %v", round, err)
	}
	if err := w.Refill(); err != nil {
		t.Fatalf("round %d: flat: Refill after crash: %v", round, err)
	}
	assertSet(t, dir, next, crashOpts.Mode)
	assertPoolFresh(t, dir, len(next))
}
