package template

import (
	"context"
	"errors"
	"io"
	"strings"
	texttemplate "text/template"
)

// Foreign is a text/template parsed with another library's functions
// (confd's, internal/confd), executed under this package's guards: the
// render budget (Limits.MaxSteps and Limits.Timeout, counted by the same
// step markers: every range iteration and template call is a step), the
// output limit, interruption by a context, and error messages that never
// quote item content unless the library vouches for the cause.
//
// The template is parsed by its owner, with its own options (a confd
// template keeps text/template's default missingkey, printing "<no
// value>", as confd does). Its functions are bound at every execution,
// since they read what is being rendered; the names must be those it was
// parsed with.
type Foreign struct {
	tmpl     *texttemplate.Template
	limits   Limits
	literals map[string]bool
	safe     func(cause error, literal func(string) bool) bool
	lastSize outputSize
}

// NewForeign takes t over (it must not be executed or changed by anyone
// else afterwards: step markers are added to its trees) with limits
// (defaults for zero fields). safe reports whether the message of an
// error one of its functions returned can be shown as it is: literal
// tells whether a string is one of the template's string constants
// (template text, not secret), so that a missing key can be named when
// the template spells it out. A nil safe withholds every such message.
func NewForeign(t *texttemplate.Template, limits Limits, safe func(cause error, literal func(string) bool) bool) *Foreign {
	literals := stringLiterals(t)
	insertSteps(t)
	return &Foreign{tmpl: t, limits: limits.withDefaults(), literals: literals, safe: safe}
}

// Name returns the template's name.
func (f *Foreign) Name() string { return f.tmpl.Name() }

// Limits returns the limits the template executes with, defaults filled in.
func (f *Foreign) Limits() Limits { return f.limits }

// ExecuteContext renders the template with funcs bound (the functions it
// was parsed with, reading this execution's data) and data as the dot.
// It stops with ErrBudgetExceeded when a budget is spent and with
// ErrInterrupted when ctx ends, at the next step. Errors are *Error
// values whose messages are sanitised as Template's are, except that a
// function's error the safe function vouches for is kept whole.
func (f *Foreign) ExecuteContext(ctx context.Context, funcs texttemplate.FuncMap, data any) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, interrupted(f.Name(), err)
	}
	tmpl, err := f.tmpl.Clone()
	if err != nil {
		return nil, &Error{Template: f.Name(), Msg: "template " + f.Name() + ": clone failed"}
	}
	tmpl.Funcs(funcs)
	var b budget
	return execute(ctx, tmpl, data, f.limits, &b, &f.lastSize, f.sanitize)
}

// ExecuteTo is ExecuteContext writing the output to w as it is made (see
// Template.ExecuteTo: an error of w's own is returned as it is).
func (f *Foreign) ExecuteTo(ctx context.Context, w io.Writer, funcs texttemplate.FuncMap, data any) error {
	if err := ctx.Err(); err != nil {
		return interrupted(f.Name(), err)
	}
	tmpl, err := f.tmpl.Clone()
	if err != nil {
		return &Error{Template: f.Name(), Msg: "template " + f.Name() + ": clone failed"}
	}
	tmpl.Funcs(funcs)
	var b budget
	return executeTo(ctx, tmpl, data, f.limits, &b, w, f.sanitize)
}

// sanitize keeps text/template's message of a function's failure when
// safe vouches for the function's error: the rest of that message
// ("template: NAME:LINE:COL: executing "NAME" at <NODE>: error calling
// F: ") is template text. Anything else goes through sanitizeExecError.
func (f *Foreign) sanitize(err error) error {
	var ee texttemplate.ExecError
	if f.safe != nil && errors.As(err, &ee) {
		msg := ee.Err.Error()
		_, tail, ok := strings.Cut(msg, ">: ")
		m := errorCallingRE().FindString(tail)
		if cause := errors.Unwrap(ee.Err); cause != nil && ok && m != "" && strings.HasPrefix(msg, "template: ") &&
			tail[len(m):] == cause.Error() && f.safe(cause, func(s string) bool { return f.literals[s] }) {
			return &Error{Template: f.Name(), Msg: msg, Err: cause}
		}
	}
	return sanitizeExecError(f.Name(), err)
}
