package template

import (
	"math"
	"slices"
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
	if steps(0, count, 1) > st.maxInts() {
		return nil, st.tooLarge()
	}
	return sprigInts("until", count), nil
}

func (st *execState) untilStep(start, stop, step int) ([]int, error) {
	if steps(start, stop, step) > st.maxInts() {
		return nil, st.tooLarge()
	}
	return sprigInts("untilStep", start, stop, step), nil
}

func (st *execState) seq(params ...int) (string, error) {
	start, stop, step := 1, 0, 1
	switch len(params) {
	case 1:
		stop = params[0]
	case 2:
		start, stop = params[0], params[1]
	case 3:
		start, step, stop = params[0], params[1], params[2]
	}
	if steps(start, stop, step) > st.maxInts() {
		return "", st.tooLarge()
	}
	return libraryFuncs()["seq"].(func(...int) string)(params...), nil
}

func (st *execState) nindent(n int, s string) (string, error) {
	out, err := st.indent(n, s)
	if err != nil {
		return "", helperErrorf(errorsKind(err), "%s", strings.TrimPrefix(err.Error(), "indent: "))
	}
	return "\n" + out, nil
}

func errorsKind(err error) error {
	if he, ok := err.(*helperError); ok {
		return he.err
	}
	return ErrBadArgument
}

// sprigInts calls sprig's until or untilStep once the size is checked.
func sprigInts(name string, args ...int) []int {
	f := libraryFuncs()[name]
	if len(args) == 1 {
		return f.(func(int) []int)(args[0])
	}
	return f.(func(int, int, int) []int)(args[0], args[1], args[2])
}
