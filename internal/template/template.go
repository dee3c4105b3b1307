// Package template renders text/template templates against one snapshot
// of items: the agent's "template" targets. It is pure: helpers read only
// the snapshot and the Host facts the caller passes in (no files, commands,
// clock or randomness; the environment only through Host.LookupEnv), item data is parsed
// through internal/itemformat (the same limits and error positions as
// confpush --validate), output and nesting are bounded (Limits), and no
// error message quotes item content. Writing the result to disk is the job
// of internal/render.
//
// Every execution also has a budget (Limits.MaxSteps, Limits.Timeout): a
// template whose loops a publisher controls ({{ range until $n }} with n
// from an item) cannot keep its caller busy for good. See budget.go.
package template

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	texttemplate "text/template"
	"text/template/parse"
	"time"

	"github.com/zkconf/zkconf/internal/itemformat"
	"github.com/zkconf/zkconf/internal/render"
)

// Snapshot is the read-only view of one verified generation that templates
// render from. Implementations must be immutable and safe for concurrent
// use: a Template may be executed from several goroutines.
type Snapshot interface {
	// Generation is the generation number of the set.
	Generation() int64
	// Names returns the item names in the set, in any order.
	Names() []string
	// Get returns an item's content and whether the item exists. The
	// bytes must never be modified, neither by the caller nor by the
	// implementation, for as long as they are reachable: helpers hand
	// them to the template as strings without copying them (item).
	Get(name string) ([]byte, bool)
}

// Default limits applied when a Limits field is zero.
const (
	DefaultMaxOutputBytes int64 = 64 << 20
	DefaultMaxDepth             = itemformat.MaxDepth
	// DefaultMaxSteps is generous: the shipped example templates take a
	// few steps per item, and ten million empty range iterations take
	// about two seconds on one core.
	DefaultMaxSteps int64 = 10_000_000
	// DefaultTimeout is the time budget of one execution.
	DefaultTimeout = 10 * time.Second
)

// Limits guards template execution against hostile or accidental
// resource exhaustion through item content.
type Limits struct {
	// MaxOutputBytes caps the rendered output and every string a helper
	// builds (indent, join, toJSON). Zero means DefaultMaxOutputBytes.
	MaxOutputBytes int64
	// MaxDepth caps the nesting depth of values returned by json, yaml and
	// toml (a flat object is depth 1). Zero means DefaultMaxDepth.
	MaxDepth int
	// MaxSteps is the step budget of one execution: every iteration of a
	// range and every call of a template ({{ template }}, {{ block }}) is
	// a step. Zero means DefaultMaxSteps.
	MaxSteps int64
	// Timeout is the time budget of one execution. Zero means
	// DefaultTimeout.
	Timeout time.Duration
}

func (l Limits) withDefaults() Limits {
	if l.MaxOutputBytes <= 0 {
		l.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	if l.MaxSteps <= 0 {
		l.MaxSteps = DefaultMaxSteps
	}
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	return l
}

// Errors a template helper can fail with; they are reachable with errors.Is
// through the *Error returned by Execute and Render.
var (
	// ErrMissingItem: item, json, yaml or toml named an item that is not in
	// the snapshot. Use "has" to test for optional items.
	ErrMissingItem = errors.New("item not found")
	// ErrInvalidData: an item could not be parsed as JSON, YAML or TOML.
	ErrInvalidData = errors.New("invalid item data")
	// ErrTooDeep: parsed item data nests deeper than Limits.MaxDepth.
	ErrTooDeep = errors.New("item data nested too deeply")
	// ErrOutputTooLarge: the output, or a string built by a helper, would
	// exceed Limits.MaxOutputBytes.
	ErrOutputTooLarge = errors.New("output exceeds size limit")
	// ErrBadArgument: a string helper got an argument it cannot handle.
	ErrBadArgument = errors.New("bad helper argument")
	// ErrMissingLabel: label named a label the agent does not have.
	ErrMissingLabel = errors.New("label not set")
	// ErrBudgetExceeded: the execution took more steps than
	// Limits.MaxSteps or ran longer than Limits.Timeout.
	ErrBudgetExceeded = errors.New("render budget exceeded")
	// ErrInterrupted: the context passed to ExecuteContext ended before
	// the execution did.
	ErrInterrupted = errors.New("render interrupted")
)

// Error is the error returned when executing a template fails. Its
// message names the template, the position and the helper or item involved
// but never includes item content, which may be secret: messages from
// text/template that can embed values are rewritten or withheld, and parse
// errors report positions only. Err, when set, is one of the Err* values of
// this package.
type Error struct {
	Template string // template name
	Msg      string // sanitised message
	Err      error  // typed cause, may be nil
}

// Error returns the sanitised message, prefixed with "render: ".
func (e *Error) Error() string { return "render: " + e.Msg }

// Unwrap returns the typed cause.
func (e *Error) Unwrap() error { return e.Err }

// Template is a parsed template, ready to be executed against any number of
// snapshots, concurrently if needed. Parse it once when the configuration
// is loaded, execute it for every generation.
type Template struct {
	tmpl   *texttemplate.Template
	limits Limits
	// literals are the template's string constants: a missing item whose
	// name is one of them is named in the error (template text is not
	// secret); any other name argument may be item content and is not.
	literals map[string]bool
	// lastSize is the size of the last output (outputSize).
	lastSize outputSize
	// idle are clones of tmpl with the helpers bound, for the next
	// executions (clonePool).
	idle clonePool
}

// boundClone is a clone of a Template's text/template with the helpers
// bound to st, which an execution fills in and empties afterwards.
type boundClone struct {
	tmpl *texttemplate.Template
	st   *execState
}

// maxIdleClones is how many clones a Template keeps between executions:
// as many as run side by side, usually one.
const maxIdleClones = 4

// clonePool keeps a Template's clones between executions. Cloning the
// template and binding the helpers (a function map of some 200 entries,
// copied and wrapped in reflect.Values) at every execution was half of
// what a render of 20 small items allocated (93 of 170 KB).
type clonePool struct {
	mu   sync.Mutex
	free []*boundClone
}

// take returns an idle clone of t, or a new one.
func (t *Template) take() (*boundClone, error) {
	t.idle.mu.Lock()
	if n := len(t.idle.free); n > 0 {
		c := t.idle.free[n-1]
		t.idle.free = t.idle.free[:n-1]
		t.idle.mu.Unlock()
		return c, nil
	}
	t.idle.mu.Unlock()
	tmpl, err := t.tmpl.Clone()
	if err != nil {
		return nil, err
	}
	st := &execState{}
	tmpl.Funcs(st.funcs())
	return &boundClone{tmpl: tmpl, st: st}, nil
}

// put empties c's state (the snapshot, the host facts and what was parsed
// must not outlive the execution) and keeps it for the next execution.
func (t *Template) put(c *boundClone) {
	*c.st = execState{}
	t.idle.mu.Lock()
	defer t.idle.mu.Unlock()
	if len(t.idle.free) < maxIdleClones {
		t.idle.free = append(t.idle.free, c)
	}
}

// outputSize is the size of a template's last output: the next
// execution's buffer starts at that size instead of growing to it by
// doubling, which for a 2 MB output allocated and copied 4 MB more and
// was a fifth of the render's CPU (docs/bench/latency-manyitems-2026-11-27).
// Executions may run side by side: the last one to finish wins.
type outputSize struct{ n atomic.Int64 }

// buffer returns an output buffer for an execution limited to max bytes.
func (s *outputSize) buffer(max int64, b *budget) *limitedBuffer {
	out := &limitedBuffer{max: max, budget: b}
	if n := min(s.n.Load(), max); n > 0 {
		out.buf.Grow(int(n))
	}
	return out
}

// Parse parses a template with the helpers below and default Limits.
// Executions are bounded in steps and time (Limits.MaxSteps,
// Limits.Timeout): an execution over budget fails with ErrBudgetExceeded.
//
// Helpers (all pure: none reads files, runs commands, reads the clock or
// draws random numbers; env reads the environment through Host only):
//
//	names              sorted item names ([]string)
//	item NAME          item content as a string; error if missing
//	has NAME           whether the item exists (bool)
//	item ROOT NAME     (and has, json, yaml, toml, names ROOT and
//	                   generation ROOT) the same on another root the
//	                   snapshot offers (RootSnapshot; confagent's roots)
//	json NAME          item parsed as JSON (numbers are json.Number, so
//	                   they print exactly as written)
//	yaml NAME          item parsed as YAML (first document)
//	toml NAME          item parsed as TOML
//	generation         the snapshot's generation number (int64)
//	join SEP LIST      join a list of strings/numbers/bools
//	split SEP S        split S into a []string
//	trim S             strip leading and trailing white space
//	upper S, lower S   change case
//	default DEF V      V, or DEF if V is empty (nil, "", 0, false, empty
//	                   list or map): {{ .port | default "80" }}
//	indent N S         prefix every line of S with N spaces
//	toJSON V           V encoded as compact JSON
//	hostname           Host.Hostname
//	env NAME           an environment variable through Host.LookupEnv,
//	                   "" when unset (the value lands in the output)
//	label NAME         one of Host.Labels; error if not set
//	labels             Host.Labels as a map (hasKey labels "zone")
//
// and sprig's hermetic function library (upper, b64enc, sha256sum,
// splitList, dict, semverCompare, regexReplaceAll, ...) without the
// functions that read the clock or draw random numbers; the helpers above
// win a name clash (Shadowed lists them), repeat, replace, until,
// untilStep, seq and nindent are bounded by Limits.MaxOutputBytes, and
// uniq takes linear time on lists of strings, numbers and booleans.
//
// Templates run with missingkey=error: a missing map key is an error, not
// "<no value>". The dot is nil; everything comes from the helpers.
func Parse(name, text string) (*Template, error) {
	return ParseWithLimits(name, text, Limits{})
}

// ParseWithLimits is Parse with explicit limits.
func ParseWithLimits(name, text string, limits Limits) (*Template, error) {
	st := &execState{limits: limits.withDefaults()}
	t, err := texttemplate.New(name).Option("missingkey=error").Funcs(libraryFuncs()).Funcs(st.funcs()).Parse(text)
	if err != nil {
		// Parse errors quote only the template text, which is not secret.
		return nil, fmt.Errorf("render: %w", err)
	}
	// The literals are collected before the step markers go in: they are
	// text nodes, not string constants, but there is no need to walk them.
	literals := stringLiterals(t)
	insertSteps(t)
	return &Template{tmpl: t, limits: st.limits, literals: literals}, nil
}

// Limits returns the limits the template executes with, defaults filled in.
func (t *Template) Limits() Limits { return t.limits }

// stringLiterals collects the string constants of every template in t.
func stringLiterals(t *texttemplate.Template) map[string]bool {
	out := map[string]bool{}
	walkNodes(t, func(n parse.Node) {
		if s, ok := n.(*parse.StringNode); ok {
			out[s.Text] = true
		}
	})
	return out
}

// walkNodes calls visit for every node of every template in t that an
// action can hold (pipelines, commands, their arguments), parents first.
func walkNodes(t *texttemplate.Template, visit func(parse.Node)) {
	var walk func(n parse.Node)
	walk = func(n parse.Node) {
		visit(n)
		switch n := n.(type) {
		case *parse.ListNode:
			if n != nil {
				for _, c := range n.Nodes {
					walk(c)
				}
			}
		case *parse.ActionNode:
			walk(n.Pipe)
		case *parse.PipeNode:
			if n != nil {
				for _, c := range n.Cmds {
					walk(c)
				}
			}
		case *parse.CommandNode:
			for _, a := range n.Args {
				walk(a)
			}
		case *parse.ChainNode:
			walk(n.Node)
		case *parse.IfNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.RangeNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.WithNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.TemplateNode:
			walk(n.Pipe)
		}
	}
	for _, tt := range t.Templates() {
		if tt.Tree != nil {
			walk(tt.Tree.Root)
		}
	}
}

// Name returns the template's name.
func (t *Template) Name() string { return t.tmpl.Name() }

// Execute renders the template from snap with a zero Host (no hostname,
// labels or environment). Errors are *Error values.
func (t *Template) Execute(snap Snapshot) ([]byte, error) {
	return t.ExecuteWith(snap, Host{})
}

// ExecuteWith renders the template from snap, with host as what the
// host-fact helpers report. Errors are *Error values.
func (t *Template) ExecuteWith(snap Snapshot, host Host) ([]byte, error) {
	return t.ExecuteContext(context.Background(), snap, host)
}

// ExecuteContext is ExecuteWith that also stops, with ErrInterrupted, when
// ctx ends: at the next step, like the budget (so within one helper call).
func (t *Template) ExecuteContext(ctx context.Context, snap Snapshot, host Host) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, interrupted(t.Name(), err)
	}
	// A clone of its own, so that concurrent executions each bind their
	// own snapshot.
	c, err := t.take()
	if err != nil {
		return nil, &Error{Template: t.Name(), Msg: fmt.Sprintf("template %s: clone failed", t.Name())}
	}
	defer t.put(c)
	// The budget is new at every execution: its timer and the context's
	// callback may still fire after the execution ended, and must not
	// stop the next one.
	*c.st = execState{snap: snap, host: host, limits: t.limits, parsed: make(map[string]any), literals: t.literals, budget: &budget{}}
	return execute(ctx, c.tmpl, nil, c.st.limits, c.st.budget, &t.lastSize, func(err error) error { return sanitizeExecError(t.Name(), err) })
}

// ExecuteTo is ExecuteContext writing the output to w as it is made
// instead of returning it: a caller that streams it into a file never
// holds the whole output in memory. On an error w has received part of
// the output (or all of it, for a late budget check): the caller
// discards what it wrote. An error w returns ends the execution and is
// returned as it is, not as an *Error, so that a failed write (a full
// disk) is told from a failed render.
func (t *Template) ExecuteTo(ctx context.Context, w io.Writer, snap Snapshot, host Host) error {
	if err := ctx.Err(); err != nil {
		return interrupted(t.Name(), err)
	}
	c, err := t.take()
	if err != nil {
		return &Error{Template: t.Name(), Msg: fmt.Sprintf("template %s: clone failed", t.Name())}
	}
	defer t.put(c)
	*c.st = execState{snap: snap, host: host, limits: t.limits, parsed: make(map[string]any), literals: t.literals, budget: &budget{}}
	return executeTo(ctx, c.tmpl, nil, c.st.limits, c.st.budget, w, func(err error) error { return sanitizeExecError(t.Name(), err) })
}

// execute runs tmpl (a clone with its functions bound) on data into a
// buffer bounded by limits (sized as the last output, size), counting its
// steps in b and stopping it when the time budget is spent or ctx ends.
// sanitize turns any other failure into an *Error.
func execute(ctx context.Context, tmpl *texttemplate.Template, data any, limits Limits, b *budget, size *outputSize, sanitize func(error) error) ([]byte, error) {
	out := size.buffer(limits.MaxOutputBytes, b)
	defer b.start(ctx, limits)()
	if err := tmpl.Execute(out, data); err != nil {
		if be := (*budgetError)(nil); errors.As(err, &be) {
			return nil, &Error{Template: tmpl.Name(), Msg: fmt.Sprintf("template %s: %s", tmpl.Name(), be.Error()), Err: be.kind}
		}
		return nil, sanitize(err)
	}
	size.n.Store(int64(out.buf.Len()))
	return out.buf.Bytes(), nil
}

// executeTo is execute writing to w (through the same limits and budget
// checks) instead of a buffer. An error of w's own is returned unchanged
// (sinkError tells it from the template's).
func executeTo(ctx context.Context, tmpl *texttemplate.Template, data any, limits Limits, b *budget, w io.Writer, sanitize func(error) error) error {
	out := &limitedWriter{w: w, max: limits.MaxOutputBytes, budget: b}
	defer b.start(ctx, limits)()
	err := tmpl.Execute(out, data)
	switch be := (*budgetError)(nil); {
	case err == nil:
		return nil
	case out.sinkErr != nil:
		return out.sinkErr
	case errors.As(err, &be):
		return &Error{Template: tmpl.Name(), Msg: fmt.Sprintf("template %s: %s", tmpl.Name(), be.Error()), Err: be.kind}
	}
	return sanitize(err)
}

// limitedWriter is limitedBuffer in front of a writer of the caller's:
// the same output limit and budget, counted over what it passed on.
type limitedWriter struct {
	w      io.Writer
	n, max int64
	budget *budget
	// sinkErr is the first error w returned.
	sinkErr error
}

// Write implements io.Writer.
func (l *limitedWriter) Write(p []byte) (int, error) {
	if err := l.budget.check(p); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil // a step marker (budget.go): nothing to pass on
	}
	if l.n+int64(len(p)) > l.max {
		return 0, ErrOutputTooLarge
	}
	n, err := l.w.Write(p)
	l.n += int64(n)
	if err != nil && l.sinkErr == nil {
		l.sinkErr = err
	}
	return n, err
}

// interrupted is the error of an execution whose context ended before it
// started.
func interrupted(name string, err error) error {
	return &Error{Template: name, Msg: fmt.Sprintf("template %s: %v: %v", name, ErrInterrupted, err), Err: ErrInterrupted}
}

// Render parses tmplText and executes it against snap, with default
// limits. Prefer Parse once plus Execute per generation.
func Render(name, tmplText string, snap Snapshot) ([]byte, error) {
	t, err := Parse(name, tmplText)
	if err != nil {
		return nil, err
	}
	return t.Execute(snap)
}

// limitedBuffer fails writes that would take it past max, which makes
// text/template stop executing. It also keeps the budget: the step
// markers (budget.go) are writes of nothing to it, and any write fails once
// the time budget is spent.
type limitedBuffer struct {
	buf    bytes.Buffer
	max    int64
	budget *budget
}

// Write implements io.Writer.
func (l *limitedBuffer) Write(p []byte) (int, error) {
	if err := l.budget.check(p); err != nil {
		return 0, err
	}
	if int64(l.buf.Len())+int64(len(p)) > l.max {
		return 0, ErrOutputTooLarge
	}
	return l.buf.Write(p)
}

// helperError is the only error type our helpers return. Its message is
// built from names and positions only, which is what lets
// sanitizeExecError pass it through unchanged.
type helperError struct {
	msg string
	err error
}

func (e *helperError) Error() string { return e.msg }
func (e *helperError) Unwrap() error { return e.err }

func helperErrorf(kind error, format string, args ...any) error {
	return &helperError{msg: fmt.Sprintf(format, args...), err: kind}
}

// execState is what the helpers of one execution close over.
type execState struct {
	snap   Snapshot
	host   Host
	limits Limits
	parsed map[string]any // "json\x00name" -> parsed value, per execution
	// literals are the template's string constants (Template.literals).
	literals map[string]bool
	// budget counts the execution's steps and says when it must stop.
	budget *budget
}

func (st *execState) funcs() texttemplate.FuncMap {
	m := st.hostFuncs()
	maps.Copy(m, texttemplate.FuncMap{
		"names":      st.names,
		"item":       st.item,
		"has":        st.has,
		"json":       st.parseJSON,
		"yaml":       st.parseYAML,
		"toml":       st.parseTOML,
		"generation": st.generation,
		"join":       st.join,
		"split":      split,
		"trim":       strings.TrimSpace,
		"upper":      strings.ToUpper,
		"lower":      strings.ToLower,
		"default":    dflt,
		"indent":     st.indent,
		"toJSON":     st.toJSON,
	})
	return m
}

func (st *execState) names(root ...string) ([]string, error) {
	snap, _, err := st.rootSnap("names", root)
	if err != nil {
		return nil, err
	}
	return slices.Sorted(slices.Values(snap.Names())), nil
}

func (st *execState) generation(root ...string) (int64, error) {
	snap, _, err := st.rootSnap("generation", root)
	if err != nil {
		return 0, err
	}
	return snap.Generation(), nil
}

func (st *execState) has(args ...string) (bool, error) {
	snap, name, err := st.itemArgs("has", args)
	if err != nil {
		return false, err
	}
	_, ok := snap.Get(name)
	return ok, nil
}

// get returns an item for helper; args are its arguments ([ROOT] NAME).
// A name argument the template does not spell out as a literal may be
// computed from item content ({{ item (trim (item "secret")) }} passes a
// secret as the name): when no item has that name, the error gives its
// length, never its value.
func (st *execState) get(helper string, args []string) ([]byte, error) {
	snap, name, err := st.itemArgs(helper, args)
	if err != nil {
		return nil, err
	}
	data, ok := snap.Get(name)
	if !ok {
		where := ""
		if len(args) == 2 && st.literals[args[0]] {
			where = fmt.Sprintf(" of root %q", args[0])
		}
		if st.literals[name] && render.ValidatePath(name) == nil {
			return nil, helperErrorf(ErrMissingItem, "item %q not found in generation %d%s", name, snap.Generation(), where)
		}
		return nil, helperErrorf(ErrMissingItem, "%s: no item with that name in generation %d%s (argument of %d bytes, not shown)",
			helper, snap.Generation(), where, len(name))
	}
	return data, nil
}

// item returns the item's bytes as a string without copying them: a
// snapshot's bytes are never modified (Snapshot), so the string is as
// immutable as Go requires, and a render of a large set no longer copies
// every item it reads (1.3 MB of the 18 MB a render of confbench
// latency's template over 20 × 64 KiB allocated).
func (st *execState) item(args ...string) (string, error) {
	data, err := st.get("item", args)
	if err != nil {
		return "", err
	}
	return frozenString(data), nil
}

// cached parses an item once per format within one execution, so that a
// template referring to (json "x") ten times parses it once.
func (st *execState) cached(f itemformat.Format, args []string) (any, error) {
	key := string(f) + "\x00" + strings.Join(args, "\x00")
	if v, ok := st.parsed[key]; ok {
		return v, nil
	}
	data, err := st.get(strings.ToLower(string(f)), args)
	if err != nil {
		return nil, err
	}
	name := args[len(args)-1]
	// Messages of itemformat name the format and a position, never the
	// content.
	v, err := itemformat.Parse(f, data, st.limits.MaxDepth)
	if errors.Is(err, itemformat.ErrTooDeep) {
		return nil, helperErrorf(ErrTooDeep, "item %q: %v", name, err)
	}
	if err != nil {
		return nil, helperErrorf(ErrInvalidData, "item %q: %v", name, err)
	}
	st.parsed[key] = v
	return v, nil
}

func (st *execState) parseJSON(args ...string) (any, error) { return st.cached(itemformat.JSON, args) }
func (st *execState) parseYAML(args ...string) (any, error) { return st.cached(itemformat.YAML, args) }
func (st *execState) parseTOML(args ...string) (any, error) { return st.cached(itemformat.TOML, args) }

func (st *execState) join(sep string, list any) (string, error) {
	rv := reflect.ValueOf(list)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return "", helperErrorf(ErrBadArgument, "join: want a list, got %T", list)
	}
	parts := make([]string, rv.Len())
	size := int64(0)
	for i := range parts {
		e := rv.Index(i).Interface()
		s, ok := scalarString(e)
		if !ok {
			return "", helperErrorf(ErrBadArgument, "join: element %d has type %T, want a string, number or bool", i, e)
		}
		parts[i] = s
		size += int64(len(s) + len(sep))
		if size > st.limits.MaxOutputBytes {
			return "", helperErrorf(ErrOutputTooLarge, "join: result exceeds %d bytes", st.limits.MaxOutputBytes)
		}
	}
	return strings.Join(parts, sep), nil
}

func scalarString(v any) (string, bool) {
	switch t := v.(type) {
	case string:
		return t, true
	case json.Number:
		return t.String(), true
	case bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return fmt.Sprint(t), true
	}
	return "", false
}

func split(sep, s string) []string { return strings.Split(s, sep) }

// dflt implements "default": the argument order puts the value last so
// that it can be piped: {{ .x | default "y" }}.
func dflt(def, v any) any {
	if isEmpty(v) {
		return def
	}
	return v
}

func isEmpty(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Map, reflect.Array, reflect.String:
		return rv.Len() == 0
	case reflect.Pointer, reflect.Interface:
		return rv.IsNil()
	}
	return rv.IsZero()
}

func (st *execState) indent(n int, s string) (string, error) {
	return st.indented("indent: ", "", n, s)
}

// indented is head followed by s with every line prefixed by n spaces
// (indent, and nindent with head "\n"), built in one allocation of the
// exact size: the result of pad + strings.ReplaceAll(...) and then "\n" +
// that copied an item base64-encoded and indented three times.
func (st *execState) indented(what, head string, n int, s string) (string, error) {
	if n < 0 {
		return "", helperErrorf(ErrBadArgument, "%snegative width %d", what, n)
	}
	lines := int64(strings.Count(s, "\n") + 1)
	size := int64(len(head)) + int64(len(s)) + int64(n)*lines
	if size-int64(len(head)) > st.limits.MaxOutputBytes {
		return "", helperErrorf(ErrOutputTooLarge, "%sresult exceeds %d bytes", what, st.limits.MaxOutputBytes)
	}
	var b strings.Builder
	b.Grow(int(size))
	b.WriteString(head)
	for {
		writeSpaces(&b, n)
		line, rest, more := strings.Cut(s, "\n")
		b.WriteString(line)
		if !more {
			break
		}
		b.WriteByte('\n')
		s = rest
	}
	return b.String(), nil
}

// writeSpaces writes n spaces to b.
func writeSpaces(b *strings.Builder, n int) {
	const spaces = "                                                                "
	for n > len(spaces) {
		b.WriteString(spaces)
		n -= len(spaces)
	}
	b.WriteString(spaces[:n])
}

func (st *execState) toJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		// json's messages can quote values (e.g. unsupported floats).
		return "", helperErrorf(ErrBadArgument, "toJSON: cannot encode a value of type %T", v)
	}
	if int64(len(b)) > st.limits.MaxOutputBytes {
		return "", helperErrorf(ErrOutputTooLarge, "toJSON: result exceeds %d bytes", st.limits.MaxOutputBytes)
	}
	return string(b), nil
}

// withheld replaces a text/template message that might contain a value.
const withheld = "execution failed (details withheld: they may contain item content)"

// leakyTails are text/template messages whose format embeds a value: the
// value part is replaced. They are checked before safeTails because a value
// could be crafted to look like a safe message.
var leakyTails = []struct{ prefix, replacement string }{
	{"if/with can't use ", "if/with can't use this value"},
	{"range can't iterate over ", "range can't iterate over this value"},
	{"range over send-only channel ", "range over send-only channel"},
	{"can't use ", "can't use this value to iterate over more than one variable"},
}

// safeTails are text/template execution messages (Go 1.2x-1.26) whose
// variable parts are template text, field names, types or numbers, never
// data values. Anything not listed is withheld, so a future Go version
// rewording a message loses detail, not secrets. The expression is compiled
// at the first failed execution, not at start-up: it is large (0.5 MB of
// allocations, a few ms), and every command that links this package
// (confpush publish among them) would pay for it at every start.
var safeTails = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(safeTailsExpr) })

var safeTailsExpr = `^(?:` + strings.Join([]string{
	`map has no entry for key "(?:[^"\\]|\\.)*"`,
	`nil data; no entry for key "(?:[^"\\]|\\.)*"`,
	`can't evaluate field [\pL\pN_]+ in type [^:]+`,
	`nil pointer evaluating [^:]+`,
	`wrong number of args for [\pL\pN_]+: want (?:at least )?\d+ got \d+`,
	`wrong type for value; expected [^;]+; got [^;]+`,
	`invalid value; expected .+`,
	`template "(?:[^"\\]|\\.)*" not defined`,
	`"(?:[^"\\]|\\.)*" is an incomplete or empty template`,
	`exceeded maximum template depth \(\d+\)`,
	`undefined variable: \$[\pL\pN_]*`,
	`cannot assign nil to [^:]+`,
	`[\pL\pN_]+ has arguments but cannot be invoked as function`,
	`[\pL\pN_]+ is not a method but has arguments`,
	`"[\pL\pN_]+" is not a defined function`,
	`dereference of nil pointer of type [^:]+`,
	`expected (?:bool|string|integer|unsigned integer|float|complex); found .+`,
	`can't handle .+ for arg of type [^:]+`,
	`error calling [\pL\pN_]+: (?:` + strings.Join([]string{
		`index out of range: -?\d+`,
		`cannot index slice/array with (?:nil|type [^:]+)`,
		`index of untyped nil`,
		`index of nil pointer`,
		`can't index item of type [^:]+`,
		`slice of untyped nil`,
		`slice of nil pointer`,
		`too many slice indexes: \d+`,
		`cannot 3-index slice a string`,
		`can't slice item of type [^:]+`,
		`invalid slice index: -?\d+ > -?\d+`,
		`len of nil pointer`,
		`len of type [^:]+`,
		`call of nil`,
		`wrong number of args for [\pL\pN_]+: got \d+ want (?:at least )?\d+`,
		`arg \d+: value is nil; should be of type [^:]+`,
		`arg \d+: value has type [^;]+; should be [^;]+`,
		`invalid type for comparison`,
		`missing argument for comparison`,
		`incompatible types for comparison: [^:]+ and [^:]+`,
	}, "|") + `)`,
}, "|") + `)$`

// errorCallingRE compiles at first use (a failed execution), as safeTails:
// its Unicode classes are costly and initialisation runs at every start
// of confpush and confagent.
var errorCallingRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^error calling ([\pL\pN_]+): `) })

// sanitizeExecError turns an error from text/template's Execute into an
// *Error whose message cannot contain item content.
func sanitizeExecError(name string, err error) error {
	if errors.Is(err, ErrOutputTooLarge) {
		var he *helperError
		if !errors.As(err, &he) { // the output writer, not a helper
			return &Error{Template: name, Msg: fmt.Sprintf("template %s: output exceeds size limit", name), Err: ErrOutputTooLarge}
		}
	}
	var ee texttemplate.ExecError
	if !errors.As(err, &ee) {
		return &Error{Template: name, Msg: fmt.Sprintf("template %s: %s", name, withheld)}
	}
	msg := ee.Err.Error()
	var head, tail string
	if h, t, ok := strings.Cut(msg, ">: "); ok && strings.HasPrefix(msg, "template: ") {
		// "template: NAME:LINE:COL: executing "NAME" at <NODE>: TAIL": the
		// head is template text only. If NODE itself contains ">: ", the
		// cut happens early and the rest is withheld below: still safe.
		head, tail = h+">", t
	} else if t, ok := strings.CutPrefix(msg, "template: "+name+": "); ok {
		head, tail = "template: "+name, t
	} else {
		return &Error{Template: name, Msg: fmt.Sprintf("template %s: %s", name, withheld)}
	}
	var he *helperError
	if errors.As(err, &he) {
		// Our helpers' messages are built from names and positions only.
		if m := errorCallingRE().FindString(tail); m != "" && strings.TrimPrefix(tail, m) == he.Error() {
			return &Error{Template: name, Msg: head + ": " + tail, Err: he}
		}
		return &Error{Template: name, Msg: head + ": " + he.Error(), Err: he}
	}
	return &Error{Template: name, Msg: head + ": " + safeTail(tail)}
}

func safeTail(tail string) string {
	for _, l := range leakyTails {
		if strings.HasPrefix(tail, l.prefix) {
			return l.replacement
		}
	}
	if safeTails().MatchString(tail) {
		return tail
	}
	if m := errorCallingRE().FindStringSubmatch(tail); m != nil {
		if strings.HasPrefix(tail[len(m[0]):], "non-comparable type") {
			// eq and friends print the compared values in this message.
			return "error calling " + m[1] + ": non-comparable types"
		}
		return "error calling " + m[1] + ": " + withheld
	}
	return withheld
}

// FuncNames returns the names of the template helpers, the library's
// included, sorted; useful for documentation and for tooling that checks
// templates.
func FuncNames() []string {
	m := libraryFuncs()
	maps.Copy(m, (&execState{}).funcs())
	return slices.Sorted(maps.Keys(m))
}
