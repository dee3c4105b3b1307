// Package errlist is zkconf's one way to report several problems at once:
// a *multierror.Error (github.com/hashicorp/go-multierror) whose message
// lists each problem on its own line. Every command validates everything
// before it writes and reports all problems together; callers iterate
// the problems with errors.As(err, &merr) and merr.Errors, or test each
// with errors.Is (a *multierror.Error matches any of its problems).
package errlist

import (
	"fmt"
	"strings"

	"github.com/hashicorp/go-multierror"
)

// Format is the ErrorFormat of every *multierror.Error zkconf returns: a
// single problem alone, several under "N problems:", one per line, with
// continuation lines of a multi-line problem indented under it.
func Format(errs []error) string {
	if len(errs) == 1 {
		return errs[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems:", len(errs))
	for _, e := range errs {
		b.WriteString("\n  - ")
		b.WriteString(strings.ReplaceAll(e.Error(), "\n", "\n    "))
	}
	return b.String()
}

// Join returns nil when errs holds no error (nil entries are skipped),
// otherwise a *multierror.Error formatted by Format. Problems that are
// themselves *multierror.Error are flattened into the one list.
func Join(errs ...error) error {
	var all *multierror.Error
	for _, e := range errs {
		if e != nil {
			all = multierror.Append(all, e)
		}
	}
	if all == nil {
		return nil
	}
	all.ErrorFormat = Format
	return all
}
