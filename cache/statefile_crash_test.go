package cache

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// crashSteps are the points at which a write is crashed, in order, and
// whether the new generation is committed there.
var crashSteps = []struct {
	step      string
	committed bool
}{
	{stepSynced, false},
	{stepRenamed, true},
	{stepCommitted, true},
	{stepSwept, true},
}

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
// new pack, conversion of the old layout): the state directory as the
// disk keeps it (imaged at that point; at the rename, also with the
// rename lost, as it is until the directory's fsync) restarts into one
// complete generation.
func TestStateCrashPowerCut(t *testing.T) {
	errCut := errors.New("power cut")
	for _, c := range crashCases() {
		for i, cs := range crashSteps {
			t.Run(c.name+"/"+cs.step, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "state", "snapshot.state")
				st, next := c.prepare(t, path)
				images := map[string]string{}
				hook := func(step string) error {
					images[step] = imageState(t, path)
					if step == cs.step {
						return errCut
					}
					return nil
				}
				st.crashAt.Store(&hook)
				if err := st.write(next); !errors.Is(err, errCut) {
					t.Fatalf("write: %v, want the cut at %s", err, cs.step)
				}
				if len(images) != i+1 {
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
					checkRestart(t, c, lost, false)
				}
				checkRestart(t, c, images[cs.step], cs.committed)
			})
		}
	}
}

// crashChildEnv names the case and step at which TestStateCrashChild
// stops, and its state path.
const crashChildEnv = "ZKCONF_STATE_CRASH"

// TestStateCrashSIGKILL: a process killed (SIGKILL) at every step of a
// write (append, new pack, conversion of the old layout) restarts into
// one complete generation.
func TestStateCrashSIGKILL(t *testing.T) {
	for _, c := range crashCases() {
		for _, cs := range crashSteps {
			t.Run(c.name+"/"+cs.step, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "state", "snapshot.state")
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestStateCrashChild$", "-test.count=1")
				cmd.Env = append(os.Environ(), crashChildEnv+"="+c.name+" "+cs.step+" "+path)
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
				checkRestart(t, c, path, cs.committed)
			})
		}
	}
}

// TestStateCrashChild is the process TestStateCrashSIGKILL kills: it
// prepares a crash case, starts its write and, at the step named in
// crashChildEnv, says so and waits to be killed.
func TestStateCrashChild(t *testing.T) {
	arg := os.Getenv(crashChildEnv)
	if arg == "" {
		t.Skip("the process TestStateCrashSIGKILL starts and kills")
	}
	f := strings.Fields(arg)
	name, at, path := f[0], f[1], f[2]
	for _, c := range crashCases() {
		if c.name != name {
			continue
		}
		st, next := c.prepare(t, path)
		hook := func(step string) error {
			if step == at {
				fmt.Println("crash point " + step)
				// Killed here: what it left is what the parent loads.
				time.Sleep(10 * time.Minute)
			}
			return nil
		}
		st.crashAt.Store(&hook)
		_ = st.write(next)
		t.Fatalf("not killed at step %s", at)
	}
	t.Fatalf("no crash case %q", name)
}
