package chaos

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The checker's own reading of agent outputs. It shares no code with the
// agent: a dir target is read by resolving DEST/..data once with
// os.Readlink, reading every file of the resolved directory, and checking
// the link again; a template output is parsed by parseTemplateOutput.

// Target names in observations.
const (
	tDir  = "dir"
	tTmpl = "template"
)

// obsState is one distinct state of one output of one agent, as the
// checker saw it. Consecutive identical reads are folded into one state.
type obsState struct {
	First, Last time.Time
	Reads       int
	Absent      bool   // nothing rendered (yet)
	Bad         string // the output could not be read as a whole: partial, empty, garbled
	Items       map[string]itemObs
	Gen         int64  // template: the generation it names
	Nonce       string // template: app.json's request, through the json helper
	Assigned    int64  // dir: the generation the checker matched it to
	MainGen     int64  // the template over both roots: main's generation
	MainNonce   string // and its request nonce
	key         string
}

// itemObs is an observed item: its content's sha256 and size; a template
// output shows binary items by size only (SizeOnly).
type itemObs struct {
	SHA      string
	Size     int64
	SizeOnly bool
}

// agentObs holds everything the checker saw of one agent.
type agentObs struct {
	idx int

	mu     sync.Mutex
	states map[string][]*obsState // by target
	reads  map[string]int64
	raced  int64
	// links: every (name, content) read through a top-level DEST/name link.
	links     map[string]map[itemObs]time.Time
	linkReads int64
	anomalies []Violation

	// caches that avoid re-hashing unchanged outputs
	dirGenDir string
	dirStamp  []fileStamp
	dirFull   int
	tmplStamp fileStamp

	onNew func(target string, s *obsState) // called for every new state
}

type fileStamp struct {
	name  string
	ino   uint64
	size  int64
	mtime int64
}

func newAgentObs(idx int) *agentObs {
	return &agentObs{idx: idx, states: map[string][]*obsState{}, reads: map[string]int64{}, links: map[string]map[itemObs]time.Time{}}
}

// record folds a read into the state list.
func (o *agentObs) record(target string, s *obsState) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.reads[target]++
	list := o.states[target]
	if n := len(list); n > 0 && list[n-1].key == s.key {
		list[n-1].Last, list[n-1].Reads = s.First, list[n-1].Reads+1
		return
	}
	s.Last, s.Reads = s.First, 1
	o.states[target] = append(list, s)
	if o.onNew != nil {
		o.onNew(target, s)
	}
}

// repeat counts a read identical to the last state without building it.
func (o *agentObs) repeat(target string, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.reads[target]++
	if list := o.states[target]; len(list) > 0 {
		list[len(list)-1].Last = at
		list[len(list)-1].Reads++
	}
}

func (o *agentObs) latest(target string) *obsState {
	o.mu.Lock()
	defer o.mu.Unlock()
	list := o.states[target]
	if len(list) == 0 {
		return nil
	}
	return list[len(list)-1]
}

func (o *agentObs) anomaly(v Violation) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.anomalies) < 100 {
		o.anomalies = append(o.anomalies, v)
	}
}

// stateKey is a canonical digest of a state.
func stateKey(s *obsState) string {
	h := sha256.New()
	fmt.Fprintf(h, "absent=%v bad=%q gen=%d nonce=%q\n", s.Absent, s.Bad, s.Gen, s.Nonce)
	for _, n := range slices.Sorted(maps.Keys(s.Items)) {
		it := s.Items[n]
		fmt.Fprintf(h, "%q %s %d %v\n", n, it.SHA, it.Size, it.SizeOnly)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// errRaced means a swap happened during the read: the read is discarded.
var errRaced = errors.New("output swapped during the read")

// pollDir reads a dir target once.
func (o *agentObs) pollDir(dest string, now time.Time) {
	target, err := os.Readlink(filepath.Join(dest, "..data"))
	if errors.Is(err, fs.ErrNotExist) {
		o.afterAbsent(tDir, now)
		return
	}
	if err != nil {
		o.anomaly(Violation{Property: "P3-partial", Agent: o.idx, At: now, Msg: fmt.Sprintf("dir target: readlink ..data: %v", err)})
		return
	}
	genDir := target
	if !filepath.IsAbs(genDir) {
		genDir = filepath.Join(dest, genDir)
	}
	// Unchanged generation directory, files unchanged by stat, and not a
	// periodic full read: the state is the last one.
	if genDir == o.dirGenDir && o.dirFull < 25 {
		if st, err := stampDir(genDir); err == nil && slices.Equal(st, o.dirStamp) {
			if again, err := os.Readlink(filepath.Join(dest, "..data")); err == nil && again == target {
				o.dirFull++
				o.repeat(tDir, now)
				o.pollLinks(dest, now)
				return
			}
		}
	}
	items, stamps, err := readGenDir(genDir)
	if err == nil {
		again, lerr := os.Readlink(filepath.Join(dest, "..data"))
		if lerr != nil || again != target {
			err = errRaced
		}
	}
	if errors.Is(err, errRaced) || errors.Is(err, fs.ErrNotExist) {
		o.mu.Lock()
		o.raced++
		o.mu.Unlock()
		return
	}
	s := &obsState{First: now}
	if err != nil {
		s.Bad = err.Error()
	} else {
		s.Items = items
	}
	s.key = stateKey(s)
	o.dirGenDir, o.dirStamp, o.dirFull = genDir, stamps, 0
	o.record(tDir, s)
	o.pollLinks(dest, now)
}

func (o *agentObs) afterAbsent(target string, now time.Time) {
	if last := o.latest(target); last != nil && !last.Absent {
		o.anomaly(Violation{Property: "P3-partial", Agent: o.idx, At: now,
			Msg: fmt.Sprintf("%s target: output disappeared after it had been rendered", target)})
	}
	s := &obsState{First: now, Absent: true}
	s.key = stateKey(s)
	o.record(target, s)
}

// readGenDir reads every file of a generation directory, walking its
// sub-directories: items are keyed by path ("conf.d/site.conf"). Anything
// but regular files and non-empty directories is an error: a directory is
// no item, and one with no file below it belongs to no generation.
func readGenDir(dir string) (map[string]itemObs, []fileStamp, error) {
	items := map[string]itemObs{}
	var stamps []fileStamp
	if err := readGenTree(dir, "", items, &stamps); err != nil {
		return nil, nil, err
	}
	return items, stamps, nil
}

func readGenTree(dir, rel string, items map[string]itemObs, stamps *[]fileStamp) error {
	entries, err := os.ReadDir(filepath.Join(dir, rel))
	if err != nil {
		return err
	}
	if rel != "" && len(entries) == 0 {
		return fmt.Errorf("generation directory holds the empty directory %q", rel)
	}
	for _, e := range entries {
		name := path.Join(rel, e.Name())
		if e.IsDir() {
			var st syscall.Stat_t
			if err := syscall.Lstat(filepath.Join(dir, name), &st); err != nil {
				return err
			}
			// Stamped as stampTree does, so an unchanged tree compares equal.
			*stamps = append(*stamps, fileStamp{name: name + "/", ino: st.Ino, mtime: st.Mtim.Nano()})
			if err := readGenTree(dir, name, items, stamps); err != nil {
				return err
			}
			continue
		}
		if !e.Type().IsRegular() {
			return fmt.Errorf("generation directory entry %q is not a regular file (%v)", name, e.Type())
		}
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
			f.Close()
			return err
		}
		h := sha256.New()
		n, err := bufio.NewReaderSize(f, 64<<10).WriteTo(h)
		f.Close()
		if err != nil {
			return err
		}
		items[name] = itemObs{SHA: hex.EncodeToString(h.Sum(nil)), Size: n}
		*stamps = append(*stamps, fileStamp{name: name, ino: st.Ino, size: st.Size, mtime: st.Mtim.Nano()})
	}
	return nil
}

// stampDir stamps every entry of a generation directory, sub-directories
// included, without reading a file.
func stampDir(dir string) ([]fileStamp, error) {
	var stamps []fileStamp
	err := stampTree(dir, "", &stamps)
	return stamps, err
}

func stampTree(dir, rel string, stamps *[]fileStamp) error {
	entries, err := os.ReadDir(filepath.Join(dir, rel))
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := path.Join(rel, e.Name())
		var st syscall.Stat_t
		if err := syscall.Lstat(filepath.Join(dir, name), &st); err != nil {
			return err
		}
		if e.IsDir() {
			// The directory too: an entry made or removed in it
			// changes its mtime, an empty one has no file to stamp.
			*stamps = append(*stamps, fileStamp{name: name + "/", ino: st.Ino, mtime: st.Mtim.Nano()})
			if err := stampTree(dir, name, stamps); err != nil {
				return err
			}
			continue
		}
		*stamps = append(*stamps, fileStamp{name: name, ino: st.Ino, size: st.Size, mtime: st.Mtim.Nano()})
	}
	return nil
}

// pollLinks reads the top-level links DEST/name one by one, as a naive
// consumer would: each may come from a different generation, but each
// must be a whole item of some generation (property 3). A link must point
// to ..data/name (docs/design.md, "Rendering a tree"); one that resolves
// to a directory is walked through the link, each level resolving ..data
// anew, and every file read so is a whole item under its path.
func (o *agentObs) pollLinks(dest string, now time.Time) {
	entries, err := os.ReadDir(dest)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, "..") {
			continue
		}
		if e.Type()&fs.ModeSymlink == 0 {
			o.anomaly(Violation{Property: "P3-partial", Agent: o.idx, At: now,
				Msg: fmt.Sprintf("dir target: top-level entry %q is not a symlink (%v)", name, e.Type())})
			continue
		}
		if to, err := os.Readlink(filepath.Join(dest, name)); err == nil && to != path.Join("..data", name) {
			o.anomaly(Violation{Property: "P3-partial", Agent: o.idx, At: now,
				Msg: fmt.Sprintf("dir target: top-level link %q points to %q, not into ..data", name, to)})
			continue
		}
		o.readThroughLink(dest, name, now)
	}
}

// readThroughLink reads DEST/rel: a file is recorded as one link read; a
// directory is listed and walked. Errors are a swap between two steps
// (dangling, or a directory gone): nothing is recorded.
func (o *agentObs) readThroughLink(dest, rel string, now time.Time) {
	p := filepath.Join(dest, rel)
	st, err := os.Stat(p)
	if err != nil {
		return
	}
	if st.IsDir() {
		entries, err := os.ReadDir(p)
		if err != nil {
			return
		}
		for _, e := range entries {
			o.readThroughLink(dest, path.Join(rel, e.Name()), now)
		}
		return
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return
	}
	it := itemObs{SHA: hexSum(b), Size: int64(len(b))}
	o.mu.Lock()
	o.linkReads++
	m := o.links[rel]
	if m == nil {
		m = map[itemObs]time.Time{}
		o.links[rel] = m
	}
	if _, ok := m[it]; !ok {
		m[it] = now
	}
	o.mu.Unlock()
}

func hexSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// pollTemplate reads a template target once.
func (o *agentObs) pollTemplate(path string, now time.Time) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		o.afterAbsent(tTmpl, now)
		return
	}
	if err != nil {
		o.anomaly(Violation{Property: "P3-partial", Agent: o.idx, At: now, Msg: fmt.Sprintf("template target: %v", err)})
		return
	}
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return
	}
	stamp := fileStamp{ino: st.Ino, size: st.Size, mtime: st.Mtim.Nano()}
	if stamp == o.tmplStamp && o.latest(tTmpl) != nil {
		o.repeat(tTmpl, now)
		return
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(f); err != nil {
		return
	}
	s := &obsState{First: now}
	gen, nonce, items, err := parseTemplateOutput(buf.Bytes())
	if err != nil {
		s.Bad = fmt.Sprintf("%v (%d bytes, starting %q)", err, buf.Len(), truncate(buf.Bytes(), 80))
	} else {
		s.Gen, s.Nonce, s.Items = gen, nonce, items
	}
	s.key = stateKey(s)
	o.tmplStamp = stamp
	o.record(tTmpl, s)
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// parseTemplateOutput parses the output of summaryTemplate. Anything but
// a complete, well-formed output is an error.
func parseTemplateOutput(data []byte) (gen int64, nonce string, items map[string]itemObs, err error) {
	if len(data) == 0 {
		return 0, "", nil, errors.New("empty template output")
	}
	if data[len(data)-1] != '\n' {
		return 0, "", nil, errors.New("template output does not end with a newline")
	}
	lines := strings.Split(string(data[:len(data)-1]), "\n")
	if len(lines) < 4 || lines[0] != "zkconf-chaos summary" {
		return 0, "", nil, errors.New("template output has no header")
	}
	g, ok := strings.CutPrefix(lines[1], "generation ")
	if !ok {
		return 0, "", nil, errors.New("no generation line")
	}
	if gen, err = strconv.ParseInt(g, 10, 64); err != nil || gen < 1 {
		return 0, "", nil, fmt.Errorf("bad generation %q", g)
	}
	if nonce, ok = strings.CutPrefix(lines[2], "nonce "); !ok {
		return 0, "", nil, errors.New("no nonce line")
	}
	last := lines[len(lines)-1]
	cnt, ok := strings.CutPrefix(last, "end ")
	if !ok {
		return 0, "", nil, errors.New("no end line: truncated")
	}
	n, err := strconv.Atoi(cnt)
	if err != nil {
		return 0, "", nil, fmt.Errorf("bad end line %q", last)
	}
	body := lines[3 : len(lines)-1]
	if len(body) != n {
		return 0, "", nil, fmt.Errorf("end line counts %d items, output has %d", n, len(body))
	}
	items = make(map[string]itemObs, n)
	for i, l := range body {
		kind, rest, _ := strings.Cut(l, " ")
		dec := json.NewDecoder(strings.NewReader(rest))
		var name string
		if err := dec.Decode(&name); err != nil {
			return 0, "", nil, fmt.Errorf("item line %d: bad name: %v", i+1, err)
		}
		if _, dup := items[name]; dup {
			return 0, "", nil, fmt.Errorf("item %q listed twice", name)
		}
		switch kind {
		case "item":
			var content string
			if err := dec.Decode(&content); err != nil {
				return 0, "", nil, fmt.Errorf("item %q: bad content: %v", name, err)
			}
			if dec.More() {
				return 0, "", nil, fmt.Errorf("item %q: trailing data", name)
			}
			items[name] = itemObs{SHA: hexSum([]byte(content)), Size: int64(len(content))}
		case "bin":
			var size int64
			if err := dec.Decode(&size); err != nil {
				return 0, "", nil, fmt.Errorf("item %q: bad size: %v", name, err)
			}
			items[name] = itemObs{Size: size, SizeOnly: true}
		default:
			return 0, "", nil, fmt.Errorf("item line %d: unknown kind %q", i+1, kind)
		}
	}
	return gen, nonce, items, nil
}
