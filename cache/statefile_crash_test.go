package cache

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkconf/zkconf/internal/render"
)

// The crash tests of the packed state: a write is stopped at each of its
// steps (between every pair of durable steps) by SIGKILL of a real process
// or by a simulated power cut (the state directory imaged at that point,
// and, where the last steps' effects are not durable yet, imaged as the
// disk may keep them: a rename lost, a truncation lost, an append torn in
// every length class), then a restarted store must load one complete
// generation (the previous before the commit point, the new one after it,
// either one in between where the new commit record is written but not
// synced: never a mix, and never older than what the write's caller could
// have handed out, which it does only after the write returns) and its
// first write must leave one pack and nothing else.
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

// crashStep is a point at which a write is crashed: whether the state as
// the process left it (its page cache) loads as the new generation
// (committed), whether the write's effects up to there may still be lost
// or torn by a power cut (volatile: the pack's unsynced tail), and
// whether it is a point of the apply's ordering only.
type crashStep struct {
	step      string
	committed bool
	volatile  bool
	applyOnly bool
}

// appendSteps are the steps of a write that appends to the pack (after
// a torn tail: truncated first), newPackSteps those of one that starts
// a pack (the first write, a compaction, a conversion).
var (
	appendSteps = []crashStep{
		{step: stepAppended, volatile: true},
		{step: stepRecorded, committed: true, volatile: true},
		{step: stepCommitted, committed: true},
		{step: stepSwept, committed: true},
		{step: stepShown, committed: true, applyOnly: true},
	}
	truncateSteps = append([]crashStep{{step: stepTruncated, volatile: true}}, appendSteps...)
	newPackSteps  = []crashStep{
		{step: stepAppended},
		{step: stepRecorded},
		{step: stepSynced},
		{step: stepRenamed, committed: true},
		{step: stepCommitted, committed: true},
		{step: stepSwept, committed: true},
		{step: stepShown, committed: true, applyOnly: true},
	}
)

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
	// prevFormat is the state's format before the write.
	prevFormat int
	steps      []crashStep
	prepare    func(t *testing.T, path string) (*stateStore, *Snapshot)
}

func crashCases() []crashCase {
	v1 := bigSet(20, 512, "v1")
	v2 := maps.Clone(v1)
	v2["item005"] = []byte("changed")
	v3 := maps.Clone(v2)
	v3["item006"] = []byte("changed again")
	all2, all3 := bigSet(20, 512, "all2"), bigSet(20, 512, "all3")
	write := func(t *testing.T, st *stateStore, gen int64, items map[string][]byte) {
		t.Helper()
		if err := st.write(newTestSnapshot(t, gen, items)); err != nil {
			t.Fatal(err)
		}
	}
	return []crashCase{{
		// One item changed: appended to the pack with its commit
		// record.
		name: "append", prevGen: 1, prev: v1, nextGen: 2, next: v2, prevFormat: stateFormat, steps: appendSteps,
		prepare: func(t *testing.T, path string) (*stateStore, *Snapshot) {
			st := newStateStore(path, "/r")
			write(t, st, 1, v1)
			return st, newTestSnapshot(t, 2, v2)
		},
	}, {
		// The restarted process's first write after a torn append
		// (a crash in the middle of generation 2's commit record):
		// the torn tail cut off, then the append.
		name: "torn-tail", prevGen: 1, prev: v1, nextGen: 3, next: v3, prevFormat: stateFormat, steps: truncateSteps,
		prepare: func(t *testing.T, path string) (*stateStore, *Snapshot) {
			st := newStateStore(path, "/r")
			write(t, st, 1, v1)
			cut := errors.New("crash")
			hook := func(step string) error {
				if step == stepRecorded {
					return cut
				}
				return nil
			}
			st.crashAt.Store(&hook)
			if err := st.write(newTestSnapshot(t, 2, v2)); !errors.Is(err, cut) {
				t.Fatalf("the torn write: %v", err)
			}
			pack := filepath.Join(st.dir, st.pack)
			fi, err := os.Stat(pack)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(pack, fi.Size()-packTrailerSize/2); err != nil {
				t.Fatal(err)
			}
			st = newStateStore(path, "/r")
			if s, err := st.load(); err != nil || s.Generation() != 1 {
				t.Fatalf("load after the torn append: %v %v", s, err)
			}
			return st, newTestSnapshot(t, 3, v3)
		},
	}, {
		// The pack is full: a new pack, the older removed after the
		// commit point.
		name: "new-pack", prevGen: 2, prev: all2, nextGen: 3, next: all3, prevFormat: stateFormat, steps: newPackSteps,
		prepare: func(t *testing.T, path string) (*stateStore, *Snapshot) {
			st := newStateStore(path, "/r")
			st.slack, st.growth = 0, 2
			write(t, st, 1, v1)
			write(t, st, 2, all2) // appended: the pack holds 2 × live
			return st, newTestSnapshot(t, 3, all3)
		},
	}, {
		// The conversion of the previous layout (format 3: a commit
		// file and a pack of bare contents): the loaded generation
		// written again to a framed pack; the older pack removed
		// after the commit point.
		name: "convert", prevGen: 4, prev: v1, nextGen: 4, next: v1, prevFormat: stateFormatV3, steps: newPackSteps,
		prepare: func(t *testing.T, path string) (*stateStore, *Snapshot) {
			writeV3State(t, path, "/r", newTestSnapshot(t, 4, v1))
			return loadLegacy(t, path)
		},
	}, {
		// The conversion of format 2 (a file per item).
		name: "convert-v2", prevGen: 4, prev: v1, nextGen: 4, next: v1, prevFormat: stateFormatV2, steps: newPackSteps,
		prepare: func(t *testing.T, path string) (*stateStore, *Snapshot) {
			writeV2State(t, path, "/r", newTestSnapshot(t, 4, v1))
			return loadLegacy(t, path)
		},
	}}
}

// loadLegacy loads the state of an older layout at path, as the process
// that converts it does.
func loadLegacy(t *testing.T, path string) (*stateStore, *Snapshot) {
	t.Helper()
	st := newStateStore(path, "/r")
	s, err := st.load()
	if err != nil || !st.legacy {
		t.Fatalf("load the old layout: %v (legacy %v)", err, st.legacy)
	}
	return st, s
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
	// And once more: the restart's append after its first write (the
	// frame chain stays intact after a truncation).
	last := withItem(after, "after-restart", "y")
	if err := st.write(newTestSnapshot(t, c.nextGen+2, last)); err != nil {
		t.Fatalf("second write after the restart: %v", err)
	}
	if s, err = loadState(path, "/r"); err != nil || s.Generation() != c.nextGen+2 {
		t.Fatalf("after the restart's second write: %v %v", s, err)
	}
	checkItems(t, s, last)
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
// append after a torn tail, new pack, conversions of the old layouts),
// alone and in the apply's ordering: the state directory (and the output)
// as the disk keeps it restarts into one complete generation. The disk
// keeps what the process wrote (imaged at that point), or less of what is
// not durable yet: at the rename, the rename lost (until the directory's
// sync); at a truncation, the truncation lost; in an unsynced append, the
// append torn in every length class (TestStateTornTails).
func TestStateCrashPowerCut(t *testing.T) {
	errCut := errors.New("power cut")
	runCrashes(t, func(t *testing.T, c crashCase, i int, apply bool) {
		cs := c.steps[i]
		path := filepath.Join(t.TempDir(), "state", "snapshot.state")
		st, next := c.prepare(t, path)
		before := imageState(t, path)
		prevPack, prevEnd := st.pack, st.end
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
		// What the disk may have kept instead, each of which must
		// load as the previous generation.
		var lost []string
		switch cs.step {
		case stepRenamed:
			// The rename is not durable before the directory's
			// sync: the previous pointer beside the new pack.
			img := imageState(t, images[stepRenamed])
			b, err := os.ReadFile(before)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(img, b, 0o600); err != nil {
				t.Fatal(err)
			}
			lost = append(lost, img)
		case stepTruncated:
			// The truncation lost: the torn tail as it was.
			lost = append(lost, before)
		}
		if cs.volatile && cs.step != stepTruncated {
			for _, torn := range tornTails(t, images[cs.step], prevPack, prevEnd) {
				lost = append(lost, torn.path)
			}
		}
		for _, img := range lost {
			if ca != nil {
				checkOutputRestart(t, c, img, outImages[cs.step])
			}
			checkRestart(t, c, img, false)
		}
		if ca != nil {
			checkOutputRestart(t, c, images[cs.step], outImages[cs.step])
		}
		checkRestart(t, c, images[cs.step], cs.committed)
	})
}

// tornImage is an image of a state directory whose pack's tail is torn.
type tornImage struct {
	class, path string
}

// tornTails returns images of the state directory at img whose pack
// (pack, of which the bytes up to end are intact and synced) holds the
// bytes past end torn in every way a power cut can tear an unsynced
// append: cut short inside the new contents, inside the commit record's
// body, inside its trailer; zeroed (the size made durable, the data
// not); the record landed but not the contents; a byte of the record
// flipped (its checksum no longer holds); garbage. Classes that need a
// commit record are left out when the append has none yet.
func tornTails(t *testing.T, img, pack string, end int64) []tornImage {
	t.Helper()
	packPath := filepath.Join(img+itemDirSuffix, pack)
	b, err := os.ReadFile(packPath)
	if err != nil {
		t.Fatal(err)
	}
	size := int64(len(b))
	if size <= end {
		t.Fatalf("pack %s: %d bytes, nothing appended past %d", pack, size, end)
	}
	bodyStart := size // no record yet: all of it contents
	if size-end > packTrailerSize && string(b[size-packTrailerSize:][:8]) == trailerMagic {
		bodyStart = size - packTrailerSize - int64(binary.BigEndian.Uint64(b[size-packTrailerSize+16:]))
	}
	mangle := map[string]func(b []byte) []byte{
		"contents-cut": func(b []byte) []byte { return b[:end+(bodyStart-end)/2] },
		"zeros": func(b []byte) []byte {
			clear(b[end:])
			return b
		},
		"garbage": func(b []byte) []byte {
			for i := end; i < size; i++ {
				b[i] = byte(i*7 + 3)
			}
			return b
		},
	}
	if bodyStart < size {
		mangle["body-cut"] = func(b []byte) []byte { return b[:bodyStart+(size-packTrailerSize-bodyStart)/2] }
		mangle["trailer-cut"] = func(b []byte) []byte { return b[:size-packTrailerSize/2] }
		mangle["trailer-only-missing"] = func(b []byte) []byte { return b[:size-packTrailerSize] }
		mangle["record-without-contents"] = func(b []byte) []byte {
			clear(b[end:bodyStart])
			return b
		}
		mangle["bad-checksum"] = func(b []byte) []byte {
			b[bodyStart+(size-packTrailerSize-bodyStart)/2] ^= 0x20
			return b
		}
	}
	var out []tornImage
	for _, class := range slices.Sorted(maps.Keys(mangle)) {
		cp := imageState(t, img)
		if err := os.WriteFile(filepath.Join(cp+itemDirSuffix, pack), mangle[class](bytes.Clone(b)), 0o600); err != nil {
			t.Fatal(err)
		}
		out = append(out, tornImage{class, cp})
	}
	return out
}

// genOf is s's generation, 0 for none.
func genOf(s *Snapshot) int64 {
	if s == nil {
		return 0
	}
	return s.Generation()
}

// TestStateTornTails: an append torn by a power cut in any length class
// (see tornTails) loads as the previous generation, complete; the next
// write cuts the torn tail off before it appends, so that no loader ever
// reads its bytes as part of a frame, and its commit loads.
func TestStateTornTails(t *testing.T) {
	v1 := bigSet(20, 512, "v1")
	// The torn append is longer than the one that follows it: an append
	// written over a torn tail instead of after cutting it off would
	// leave the torn frame's commit record in place.
	v2 := withItem(v1, "item003", strings.Repeat("second", 2000))
	v3 := withItem(v1, "item004", "third")
	for _, at := range []string{stepAppended, stepRecorded} {
		path := filepath.Join(t.TempDir(), "state", "snapshot.state")
		st := newStateStore(path, "/r")
		if err := st.write(newTestSnapshot(t, 1, v1)); err != nil {
			t.Fatal(err)
		}
		pack, end := st.pack, st.end
		var img string
		hook := func(step string) error {
			if step == at {
				img = imageState(t, path)
				return errors.New("power cut")
			}
			return nil
		}
		st.crashAt.Store(&hook)
		if err := st.write(newTestSnapshot(t, 2, v2)); err == nil {
			t.Fatal("the cut write succeeded")
		}
		for _, torn := range tornTails(t, img, pack, end) {
			t.Run(at+"/"+torn.class, func(t *testing.T) {
				st := newStateStore(torn.path, "/r")
				s, err := st.load()
				if err != nil || s.Generation() != 1 {
					t.Fatalf("load: generation %d, %v; want 1", genOf(s), err)
				}
				checkItems(t, s, v1)
				fi, err := os.Stat(filepath.Join(torn.path+itemDirSuffix, pack))
				if err != nil {
					t.Fatal(err)
				}
				if err := st.write(newTestSnapshot(t, 3, v3)); err != nil {
					t.Fatal(err)
				}
				if st.last.newPack || st.last.truncated != fi.Size()-end {
					t.Fatalf("write after the torn tail: %+v, want %d bytes cut off and an append", st.last, fi.Size()-end)
				}
				if fs, _, _ := lastFrame(t, filepath.Join(torn.path+itemDirSuffix, pack)); fs != end {
					t.Fatalf("the new frame starts at %d, want %d: right after generation 1's", fs, end)
				}
				s, err = loadState(torn.path, "/r")
				if err != nil || s.Generation() != 3 {
					t.Fatalf("after the write: generation %d, %v; want 3", genOf(s), err)
				}
				checkItems(t, s, v3)
			})
		}
	}
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
		for i, cs := range c.steps {
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
// write (append, append after a torn tail, new pack, conversions of the
// old layouts), alone and in the apply's ordering, restarts into one
// complete generation: the previous one until the commit record is
// written (an append) or the pointer renamed (a new pack), the new one
// after.
func TestStateCrashSIGKILL(t *testing.T) {
	runCrashes(t, func(t *testing.T, c crashCase, i int, apply bool) {
		cs := c.steps[i]
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
