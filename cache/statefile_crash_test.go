package cache

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkconf/zkconf/internal/render"
)

// The crash tests of the packed state: a write is stopped at each of its
// steps (between every pair of durable steps) by SIGKILL of a real process
// or by a simulated power cut (the state directory imaged at that point,
// and, where the last step's effect is not durable yet, imaged as the
// disk may keep it), then a restarted store must load one complete
// generation (the previous before the commit point, the new one after it:
// never a mix, and never older than what the write's caller could have
// handed out, which it does only after the write returns) and its first
// write must leave one pack and nothing else.
//
// Each case and step also runs in the apply's ordering (the "apply"
// variants, persist ∥ stage): the cache (WithDurableBarrier) hands the
// snapshot out before its write, a renderer of a dir target stages it
// beside the output, which shows the previous generation, and swaps it in
// only once Snapshot.Durable returned; the crash comes at each step of the
// write with the new generation staged, and once more after the output
// showed it (stepShown). The output directory is imaged (or left by the
// killed process) with the state, and the restart must find the output
// showing one complete generation, never newer than the state it loads,
// and render the loaded generation there completely.

// crashSteps are the points at which a write is crashed, in order, and
// whether the new generation is committed there; applyOnly marks a point
// of the apply's ordering only.
var crashSteps = []struct {
	step      string
	committed bool
	applyOnly bool
}{
	{stepSynced, false, false},
	{stepRenamed, true, false},
	{stepCommitted, true, false},
	{stepSwept, true, false},
	{stepShown, true, true},
}

// stepShown is the point, in the apply's ordering, after the output
// showed the new generation.
const stepShown = "shown"

// crashCase is a write a crash interrupts. prepare leaves generation
// prevGen (prev) committed at path and returns the store as the process
// that wrote or loaded it holds it, and the snapshot whose write crashes
// (nextGen, next).
type crashCase struct {
	name             string
	prevGen, nextGen int64
	prev, next       map[string][]byte
	// prevFormat is the commit file's format before the write.
	prevFormat int
	prepare    func(t *testing.T, path string) (*stateStore, *Snapshot)
}

func crashCases() []crashCase {
	v1 := bigSet(20, 512, "v1")
	v2 := maps.Clone(v1)
	v2["item005"] = []byte("changed")
	all2, all3 := bigSet(20, 512, "all2"), bigSet(20, 512, "all3")
	write := func(t *testing.T, st *stateStore, gen int64, items map[string][]byte) {
		t.Helper()
		if err := st.write(newTestSnapshot(t, gen, items)); err != nil {
			t.Fatal(err)
		}
	}
	return []crashCase{{
		// One item changed: appended to the pack.
		name: "append", prevGen: 1, prev: v1, nextGen: 2, next: v2, prevFormat: stateFormat,
		prepare: func(t *testing.T, path string) (*stateStore, *Snapshot) {
			st := newStateStore(path, "/r")
			write(t, st, 1, v1)
			return st, newTestSnapshot(t, 2, v2)
		},
	}, {
		// The pack is full: a new pack, the older removed after the
		// commit point.
		name: "new-pack", prevGen: 2, prev: all2, nextGen: 3, next: all3, prevFormat: stateFormat,
		prepare: func(t *testing.T, path string) (*stateStore, *Snapshot) {
			st := newStateStore(path, "/r")
			st.slack = 0
			write(t, st, 1, v1)
			write(t, st, 2, all2) // appended: the pack holds 2 × live
			return st, newTestSnapshot(t, 3, all3)
		},
	}, {
		// The conversion of the previous layout (a file per item): the
		// loaded generation written again, packed; the item files
		// removed after the commit point.
		name: "convert", prevGen: 4, prev: v1, nextGen: 4, next: v1, prevFormat: stateFormatV2,
		prepare: func(t *testing.T, path string) (*stateStore, *Snapshot) {
			writeV2State(t, path, "/r", newTestSnapshot(t, 4, v1))
			st := newStateStore(path, "/r")
			s, err := st.load()
			if err != nil || !st.legacy {
				t.Fatalf("load the old layout: %v (legacy %v)", err, st.legacy)
			}
			return st, s
		},
	}}
}

// checkRestart is the restart after a crash of c's write at a step: the
// state at path loads as want (the previous or the new generation, whole,
// in format), and the restarted store's first write leaves one pack, which
// loads.
func checkRestart(t *testing.T, c crashCase, path string, committed bool) {
	t.Helper()
	wantGen, want, wantFormat := c.prevGen, c.prev, c.prevFormat
	if committed {
		wantGen, want, wantFormat = c.nextGen, c.next, stateFormat
	}
	st := newStateStore(path, "/r")
	s, err := st.load()
	if err != nil || s == nil {
		t.Fatalf("restart: %v %v, want generation %d", s, err, wantGen)
	}
	if s.Generation() != wantGen {
		t.Fatalf("restart: generation %d, want %d", s.Generation(), wantGen)
	}
	checkItems(t, s, want)
	if f := committed2format(t, path); f != wantFormat {
		t.Fatalf("restart: format %d, want %d", f, wantFormat)
	}
	after := withItem(want, "after-restart", "x")
	if err := st.write(newTestSnapshot(t, c.nextGen+1, after)); err != nil {
		t.Fatalf("first write after the restart: %v", err)
	}
	onlyPack(t, path)
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 2 {
		t.Fatalf("%d entries in the state directory after the restart's write", len(ents))
	}
	s, err = loadState(path, "/r")
	if err != nil || s.Generation() != c.nextGen+1 {
		t.Fatalf("after the restart's write: %v %v", s, err)
	}
	checkItems(t, s, after)
}

// committed2format is the format of the commit file at path.
func committed2format(t *testing.T, path string) int {
	t.Helper()
	return committed(t, path, "/r").format
}

// imageState copies the state directory (the commit file's directory)
// into a new directory and returns the state path in it.
func imageState(t *testing.T, path string) string {
	t.Helper()
	img := filepath.Join(t.TempDir(), "img")
	if out, err := exec.Command("cp", "-a", filepath.Dir(path), img).CombinedOutput(); err != nil {
		t.Fatalf("image the state directory: %v: %s", err, out)
	}
	return filepath.Join(img, filepath.Base(path))
}

// TestStateCrashPowerCut: a power cut at every step of a write (append,
// new pack, conversion of the old layout), alone and in the apply's
// ordering: the state directory (and the output) as the disk keeps it
// (imaged at that point; at the rename, also with the rename lost, as it
// is until the directory's fsync) restarts into one complete generation.
func TestStateCrashPowerCut(t *testing.T) {
	errCut := errors.New("power cut")
	runCrashes(t, func(t *testing.T, c crashCase, i int, apply bool) {
		cs := crashSteps[i]
		path := filepath.Join(t.TempDir(), "state", "snapshot.state")
		st, next := c.prepare(t, path)
		images, outImages := map[string]string{}, map[string]string{}
		var ca *crashApply
		if apply {
			ca = newCrashApply(t, path, c.prev)
		}
		hook := func(step string) error {
			if step == stepRetract {
				return nil // after the cut: no longer the disk's state
			}
			if ca != nil {
				<-ca.staged
				if step == stepSwept {
					// Past the durable point the renderer
					// swaps meanwhile: imaged once it has
					// (a copy cannot race its removals).
					<-ca.finished
				}
				outImages[step] = ca.image(t)
			}
			images[step] = imageState(t, path)
			if step == cs.step {
				return errCut
			}
			return nil
		}
		st.crashAt.Store(&hook)
		switch {
		case ca == nil:
			if err := st.write(next); !errors.Is(err, errCut) {
				t.Fatalf("write: %v, want the cut at %s", err, cs.step)
			}
		case cs.step == stepShown:
			st.crashAt.Store(nil)
			ca.run(t, st, next)
			if err := <-ca.shown; err != nil {
				t.Fatal(err)
			}
			outImages[stepShown], images[stepShown] = ca.image(t), imageState(t, path)
		default:
			ca.run(t, st, next)
			<-ca.shown
		}
		if !cs.applyOnly && len(images) != i+1 {
			t.Fatalf("steps run: %v", images)
		}
		if cs.step == stepRenamed {
			// The rename is not durable before the directory's
			// fsync: the disk may keep the previous commit file
			// beside the new bytes.
			lost := imageState(t, images[stepRenamed])
			b, err := os.ReadFile(filepath.Join(filepath.Dir(images[stepSynced]), filepath.Base(path)))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(lost, b, 0o600); err != nil {
				t.Fatal(err)
			}
			if ca != nil {
				checkOutputRestart(t, c, lost, outImages[stepRenamed])
			}
			checkRestart(t, c, lost, false)
		}
		if ca != nil {
			checkOutputRestart(t, c, images[cs.step], outImages[cs.step])
		}
		checkRestart(t, c, images[cs.step], cs.committed)
	})
}

// crashApply is the apply's ordering around a write (persist ∥ stage): a
// cache with WithDurableBarrier hands the snapshot out and writes it, and
// a renderer of a dir target at out, following the agent's protocol
// (stage, Snapshot.Durable, commit), stages it and shows it only after
// Durable returned.
type crashApply struct {
	out    string
	w      *render.DirWriter
	staged chan struct{} // closed once the new generation is staged
	shown  chan error    // the renderer's end: nil once it showed it
	// finished is closed once the renderer sent on shown.
	finished chan struct{}
}

var crashOutputOpts = render.FileOptions{Mode: 0o600, UID: -1, GID: -1}

// runCrashes runs crash(t, case, step index, apply) as a subtest for
// every crash case and step, alone and in the apply's ordering (a step
// marked applyOnly in that only). The subtests run in parallel: each has
// its own directories and store, and most of their time is waiting (on
// fsyncs, on the killed child's start), not CPU.
func runCrashes(t *testing.T, crash func(t *testing.T, c crashCase, step int, apply bool)) {
	for _, c := range crashCases() {
		for i, cs := range crashSteps {
			for _, apply := range []bool{false, true} {
				if cs.applyOnly && !apply {
					continue
				}
				name := c.name + "/" + cs.step
				if apply {
					name += "/apply"
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					crash(t, c, i, apply)
				})
			}
		}
	}
}

// crashOutputDir is where the apply variants render, beside the state
// directory of path.
func crashOutputDir(path string) string {
	return filepath.Join(filepath.Dir(filepath.Dir(path)), "out")
}

// newCrashApply makes the output at crashOutputDir(path) show prev.
func newCrashApply(t *testing.T, path string, prev map[string][]byte) *crashApply {
	t.Helper()
	ca := &crashApply{out: crashOutputDir(path), staged: make(chan struct{}), shown: make(chan error, 1), finished: make(chan struct{})}
	ca.w = render.NewDirWriter(ca.out)
	if _, err := ca.w.Write(prev, crashOutputOpts); err != nil {
		t.Fatal(err)
	}
	return ca
}

// run applies next through a cache holding st, the renderer receiving it
// on its own goroutine, and returns when the cache's write returned (the
// renderer may still be swapping: wait for shown).
func (ca *crashApply) run(t *testing.T, st *stateStore, next *Snapshot) {
	c := &Cache{store: st, opts: options{durableBarrier: true, stateFile: st.path}, log: slog.New(slog.DiscardHandler),
		updates: make(chan *Snapshot, 1), snapWake: make(chan struct{})}
	go func() {
		defer close(ca.finished)
		s := <-c.updates
		staged, err := ca.w.Stage(s.itemMap(), crashOutputOpts)
		close(ca.staged)
		if err != nil {
			ca.shown <- err
			return
		}
		if err := s.Durable(context.Background()); err != nil {
			staged.Abort()
			ca.shown <- err
			return
		}
		_, err = staged.Commit()
		ca.shown <- err
	}()
	c.apply(next)
}

// image copies the output directory (a power cut's view of it) and
// returns the copy.
func (ca *crashApply) image(t *testing.T) string {
	t.Helper()
	img := filepath.Join(t.TempDir(), "out")
	if out, err := exec.Command("cp", "-a", ca.out, img).CombinedOutput(); err != nil {
		t.Fatalf("image the output: %v: %s", err, out)
	}
	return img
}

// checkOutputRestart is the renderer's restart after a crash of c's write
// in the apply's ordering: the output at out shows one complete
// generation, the previous or the new one, never newer than the state at
// path loads (nothing showed a generation before it was durable); the
// restart renders the loaded generation there, completely.
func checkOutputRestart(t *testing.T, c crashCase, path, out string) {
	t.Helper()
	shown, err := render.ReadCurrent(out)
	if err != nil {
		t.Fatalf("output before the restart: %v", err)
	}
	var shownGen int64
	switch {
	case maps.EqualFunc(shown, c.prev, bytes.Equal):
		shownGen = c.prevGen
	case maps.EqualFunc(shown, c.next, bytes.Equal):
		shownGen = c.nextGen
	default:
		t.Fatalf("the output shows neither generation %d nor %d whole: %d files", c.prevGen, c.nextGen, len(shown))
	}
	s, err := loadState(path, "/r")
	if err != nil || s == nil {
		t.Fatalf("restart: %v %v", s, err)
	}
	if s.Generation() < shownGen {
		t.Fatalf("restart: the state holds generation %d, the output showed %d before the crash (backwards)", s.Generation(), shownGen)
	}
	files := s.itemMap()
	if _, err := render.NewDirWriter(out).Write(files, crashOutputOpts); err != nil {
		t.Fatalf("restart: render: %v", err)
	}
	got, err := render.ReadCurrent(out)
	if err != nil || !maps.EqualFunc(got, files, bytes.Equal) {
		t.Fatalf("restart: the output does not show generation %d whole: %v", s.Generation(), err)
	}
}

// crashChildEnv names the case and step at which TestStateCrashChild
// stops, and its state path.
const crashChildEnv = "ZKCONF_STATE_CRASH"

// TestStateCrashSIGKILL: a process killed (SIGKILL) at every step of a
// write (append, new pack, conversion of the old layout), alone and in the
// apply's ordering, restarts into one complete generation.
func TestStateCrashSIGKILL(t *testing.T) {
	runCrashes(t, func(t *testing.T, c crashCase, i int, apply bool) {
		cs := crashSteps[i]
		path := filepath.Join(t.TempDir(), "state", "snapshot.state")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestStateCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %s %v", crashChildEnv, c.name, cs.step, path, apply))
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		reached := false
		for sc.Scan() {
			if sc.Text() == "crash point "+cs.step {
				reached = true
				break
			}
		}
		// SIGKILL, whatever the child was doing.
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if !reached {
			t.Fatalf("the child never reached step %s (%v)", cs.step, sc.Err())
		}
		if apply {
			checkOutputRestart(t, c, path, crashOutputDir(path))
		}
		checkRestart(t, c, path, cs.committed)
	})
}

// TestStateCrashChild is the process TestStateCrashSIGKILL kills: it
// prepares a crash case, starts its write (alone, or in the apply's
// ordering) and, at the step named in crashChildEnv, says so and waits to
// be killed.
func TestStateCrashChild(t *testing.T) {
	arg := os.Getenv(crashChildEnv)
	if arg == "" {
		t.Skip("the process TestStateCrashSIGKILL starts and kills")
	}
	f := strings.Fields(arg)
	name, at, path, apply := f[0], f[1], f[2], f[3] == "true"
	crash := func(step string) {
		fmt.Println("crash point " + step)
		// Killed here: what it left is what the parent loads.
		time.Sleep(10 * time.Minute)
	}
	for _, c := range crashCases() {
		if c.name != name {
			continue
		}
		st, next := c.prepare(t, path)
		var ca *crashApply
		if apply {
			ca = newCrashApply(t, path, c.prev)
		}
		hook := func(step string) error {
			if step == at {
				if ca != nil {
					<-ca.staged
				}
				crash(step)
			}
			return nil
		}
		st.crashAt.Store(&hook)
		if ca == nil {
			_ = st.write(next)
		} else {
			ca.run(t, st, next)
			if err := <-ca.shown; err != nil {
				t.Fatal(err)
			}
			if at == stepShown {
				crash(at)
			}
		}
		t.Fatalf("not killed at step %s", at)
	}
	t.Fatalf("no crash case %q", name)
}
