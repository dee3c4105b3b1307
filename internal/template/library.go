package template

import (
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	texttemplate "text/template"

	"github.com/Masterminds/sprig/v3"
)

// Host is what the host-fact helpers (hostname, env, label, labels) report.
// The engine never looks at the host itself: whoever executes a template
// (the agent) passes the facts in, so rendering stays a function of its
// inputs and a zero Host renders the same on every machine.
type Host struct {
	// Hostname is what {{ hostname }} returns.
	Hostname string
	// Labels are what {{ label NAME }} and {{ labels }} read (the agent's
	// configured labels, plus "hostname").
	Labels map[string]string
	// LookupEnv is what {{ env NAME }} reads (os.LookupEnv in the agent);
	// nil makes every variable unset.
	LookupEnv func(string) (string, bool)
}

// nondeterministic are functions of sprig's hermetic map whose result
// still depends on the clock or on randomness. A rendered file must be a
// function of the generation and the host: a helper that changes the
// output on every run would make every apply (resync, drift repair,
// restart) rewrite the file and run its reload.
var nondeterministic = []string{
	"ago", "durationRound", // time.Since
	"shuffle", "randInt",
	"bcrypt", "htpasswd", "encryptAES", // random salt or IV
	"genPrivateKey", "genCA", "genCAWithKey", "genSelfSignedCert",
	"genSelfSignedCertWithKey", "genSignedCert", "genSignedCertWithKey",
}

// libraryFuncs returns the function library: sprig's hermetic text
// functions (github.com/Masterminds/sprig/v3, HermeticTxtFuncMap, which
// already leaves out env, expandenv, getHostByName, the clock and random
// strings) without the nondeterministic ones above. zkconf's own helpers
// are added over it and win a name clash (see Shadowed).
func libraryFuncs() texttemplate.FuncMap {
	m := sprig.HermeticTxtFuncMap()
	for _, name := range nondeterministic {
		delete(m, name)
	}
	// The same functions without sprig's copies of their arguments and
	// results (nocopy.go).
	m["b64enc"] = b64enc
	m["sha256sum"] = sha256sum
	m["toJson"] = toJSONString
	return m
}

// Shadowed returns the names of sprig functions that zkconf's own helpers
// replace, sorted. Some keep sprig's meaning and add limits (indent, join,
// repeat, replace, until, ...); has and split mean something else here: has NAME
// tests for an item (sprig's list membership test is mustHas) and split
// returns a list (sprig's map-returning split is not available; use
// splitList for the same list).
func Shadowed() []string {
	lib := libraryFuncs()
	var out []string
	for name := range (&execState{}).funcs() {
		if _, ok := lib[name]; ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// hostFuncs are the host-fact helpers.
func (st *execState) hostFuncs() texttemplate.FuncMap {
	return texttemplate.FuncMap{
		"hostname": func() string { return st.host.Hostname },
		"env":      st.env,
		"label":    st.label,
		"labels":   st.labels,
		// Bounded versions of sprig functions whose result size an
		// argument (possibly item content) controls.
		"repeat":    st.repeat,
		"until":     st.until,
		"untilStep": st.untilStep,
		"seq":       st.seq,
		"nindent":   st.nindent,
		"replace":   st.replace,
		// sprig's uniq compares every element with every kept one: a
		// list of a million strings would keep one call busy for hours,
		// out of the render budget's reach.
		"uniq":     st.uniq,
		"mustUniq": st.uniq,
	}
}

// env returns an environment variable of the agent's process, "" when
// unset (as consul-template's env does; pipe to default for a fallback).
func (st *execState) env(name string) string {
	if st.host.LookupEnv == nil {
		return ""
	}
	v, _ := st.host.LookupEnv(name)
	return v
}

// label returns a label of the agent; a label that is not configured is an
// error (test with {{ if hasKey labels "zone" }}).
func (st *execState) label(name string) (string, error) {
	v, ok := st.host.Labels[name]
	if !ok {
		if st.literals[name] {
			return "", helperErrorf(ErrMissingLabel, "label %q is not set in the agent configuration", name)
		}
		return "", helperErrorf(ErrMissingLabel, "no label with that name (argument of %d bytes, not shown)", len(name))
	}
	return v, nil
}

// labels returns a copy of the agent's labels, for hasKey, keys and range.
func (st *execState) labels() map[string]any {
	out := make(map[string]any, len(st.host.Labels))
	for k, v := range st.host.Labels {
		out[k] = v
	}
	return out
}

// tooLarge is the error of a bounded library function; text/template
// names the function ("error calling repeat: ...").
func (st *execState) tooLarge() error {
	return helperErrorf(ErrOutputTooLarge, "result exceeds %d bytes", st.limits.MaxOutputBytes)
}

func (st *execState) repeat(count int, s string) (string, error) {
	if count < 0 {
		return "", helperErrorf(ErrBadArgument, "negative count %d", count)
	}
	if count > 0 && int64(len(s)) > st.limits.MaxOutputBytes/int64(count) {
		return "", st.tooLarge()
	}
	return strings.Repeat(s, count), nil
}

// replace is sprig's replace (replace OLD NEW S, for pipes), with the
// result's size checked before it is built: replacing "" inserts NEW
// between every byte of S.
func (st *execState) replace(old, new, src string) (string, error) {
	n := int64(strings.Count(src, old))
	if int64(len(src))+n*(int64(len(new))-int64(len(old))) > st.limits.MaxOutputBytes {
		return "", st.tooLarge()
	}
	return strings.ReplaceAll(src, old, new), nil
}

// steps is how many numbers counting from start towards stop by step
// makes, as a float so that extreme arguments cannot overflow.
func steps(start, stop, step int) float64 {
	return math.Abs(float64(stop)-float64(start)) / math.Max(1, math.Abs(float64(step)))
}

// maxInts is how many ints a list helper may build: 8 bytes each.
func (st *execState) maxInts() float64 { return float64(st.limits.MaxOutputBytes / 8) }

func (st *execState) until(count int) ([]int, error) {
	step := 1
	if count < 0 {
		step = -1
	}
	return st.untilStep(0, count, step)
}

// untilStep is sprig's untilStep (the numbers from start towards stop,
// stop excluded, by step; none when step does not lead there), built in
// one allocation of the exact size once the size is checked.
func (st *execState) untilStep(start, stop, step int) ([]int, error) {
	if steps(start, stop, step) > st.maxInts() {
		return nil, st.tooLarge()
	}
	if (stop < start && step >= 0) || (stop >= start && step <= 0) {
		return []int{}, nil
	}
	v := make([]int, 0, int(math.Ceil(steps(start, stop, step))))
	if stop < start {
		for i := start; i > stop; i += step {
			v = append(v, i)
			if i+step > i { // wrapped around
				break
			}
		}
		return v, nil
	}
	for i := start; i < stop; i += step {
		v = append(v, i)
		if i+step < i {
			break
		}
	}
	return v, nil
}

// seq is sprig's seq (seq STOP, seq START STOP, seq START STEP STOP: the
// numbers from START to STOP inclusive, space-separated), with the list
// and the string it makes bounded.
func (st *execState) seq(params ...int) (string, error) {
	var start, stop, step int
	switch len(params) {
	case 0:
		return "", nil
	case 1:
		start, stop, step = 1, params[0], 1
		if stop < start {
			step = -1
		}
		stop += step
	case 2:
		start, stop, step = params[0], params[1], 1
		if stop < start {
			step = -1
		}
		stop += step
	case 3:
		start, step, stop = params[0], params[1], params[2]
		inc := 1
		if stop < start {
			inc = -1
			if step > 0 {
				return "", nil
			}
		}
		stop += inc
	default:
		// sprig's seq prints nothing for more than three numbers.
		return "", nil
	}
	// Every number takes at most 21 bytes with its separator.
	if steps(start, stop, step) > float64(st.limits.MaxOutputBytes/21) {
		return "", st.tooLarge()
	}
	nums, err := st.untilStep(start, stop, step)
	if err != nil {
		return "", err
	}
	b := make([]byte, 0, len(nums)*4)
	for i, n := range nums {
		if i > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendInt(b, int64(n), 10)
	}
	return string(b), nil
}

func (st *execState) nindent(n int, s string) (string, error) {
	return st.indented("", "\n", n, s)
}

// uniq is sprig's uniq (and mustUniq): the list's elements without
// repetitions, in the order of their first occurrence, equal meaning
// reflect.DeepEqual. Strings, numbers and booleans, which DeepEqual
// compares as == does, are found in a set; other elements (lists, maps)
// are compared with the other ones kept, checking the render budget as it
// goes.
func (st *execState) uniq(list any) ([]any, error) {
	rv := reflect.ValueOf(list)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, helperErrorf(ErrBadArgument, "want a list, got %T", list)
	}
	out := []any{}
	seen := map[any]bool{}
	var others []any
	for i := range rv.Len() {
		item := rv.Index(i).Interface()
		if item == nil || basicKind(reflect.TypeOf(item).Kind()) {
			if !seen[item] {
				seen[item] = true
				out = append(out, item)
			}
			continue
		}
		dup := false
		for j, o := range others {
			if j%1024 == 0 {
				if err := st.budget.stopped(); err != nil {
					return nil, err
				}
			}
			if reflect.DeepEqual(item, o) {
				dup = true
				break
			}
		}
		if !dup {
			others = append(others, item)
			out = append(out, item)
		}
	}
	return out, nil
}

// basicKind reports whether values of kind k compare with == as
// reflect.DeepEqual compares them.
func basicKind(k reflect.Kind) bool {
	switch k {
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	}
	return false
}
