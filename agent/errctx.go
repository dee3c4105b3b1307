package agent

import (
	"errors"
	"fmt"
	"strings"
)

// phaseMessage is a target's failure as its status shows it: the phase
// (kind) once, then err. The layers below already name some phases: the
// atomic writers' and the template engine's errors start with "render: ",
// and a CommandError starts with "check command of target …"; prefixing
// those again would read "render: render: mkdir …".
func phaseMessage(kind string, err error) string {
	msg := err.Error()
	if namesPhase(kind, err) {
		return msg
	}
	return kind + ": " + msg
}

// targetContext is what an apply error puts between its generation and
// err: the target and the phase, each unless err already says it.
func targetContext(t *target, kind string, err error) string {
	var ce *CommandError
	if errors.As(err, &ce) && ce.Target == t.spec.Name && ce.Kind == kind {
		return ""
	}
	if namesPhase(kind, err) {
		return fmt.Sprintf("target %q: ", t.spec.Name)
	}
	return fmt.Sprintf("target %q: %s: ", t.spec.Name, kind)
}

// namesPhase reports whether err's message starts with its phase.
func namesPhase(kind string, err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, kind+": ") || strings.HasPrefix(msg, kind+" command of ")
}
