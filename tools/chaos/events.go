package chaos

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// event is one line of the run's history: a fault starting or ending, a
// publish and its outcome, an agent's output changing, a check result.
type event struct {
	At   time.Duration // since the run started
	Kind string        // "fault", "publish", "observe", "agent", "check", "run"
	Msg  string
}

func (e event) String() string {
	return fmt.Sprintf("%9.3fs %-8s %s", e.At.Seconds(), e.Kind, e.Msg)
}

// eventLog keeps every event in memory (to print the history around a
// violation) and streams it to a file.
type eventLog struct {
	start time.Time

	mu     sync.Mutex
	events []event
	w      *bufio.Writer
	f      *os.File
	echo   io.Writer // progress output for selected kinds, may be nil
}

func newEventLog(start time.Time, path string, echo io.Writer) (*eventLog, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &eventLog{start: start, f: f, w: bufio.NewWriterSize(f, 64<<10), echo: echo}, nil
}

func (l *eventLog) since(t time.Time) time.Duration { return t.Sub(l.start) }

func (l *eventLog) add(kind, format string, args ...any) {
	l.addAt(time.Now(), kind, format, args...)
}

func (l *eventLog) addAt(at time.Time, kind, format string, args ...any) {
	e := event{At: at.Sub(l.start), Kind: kind, Msg: fmt.Sprintf(format, args...)}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
	if l.w != nil {
		fmt.Fprintln(l.w, e.String())
	}
	if l.echo != nil && (kind == "fault" || kind == "run" || kind == "check") {
		fmt.Fprintln(l.echo, e.String())
	}
}

// around returns the events from before ahead of at to after past it,
// at most maxBefore of them before at and maxAfter after.
func (l *eventLog) around(at time.Duration, before, after time.Duration, maxBefore, maxAfter int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var pre, post []string
	for _, e := range l.events {
		switch {
		case e.At < at-before || e.At > at+after:
		case e.At <= at:
			pre = append(pre, e.String())
		default:
			post = append(post, e.String())
		}
	}
	if len(pre) > maxBefore {
		pre = append([]string{fmt.Sprintf("... %d earlier events in the history file", len(pre)-maxBefore)}, pre[len(pre)-maxBefore:]...)
	}
	if len(post) > maxAfter {
		post = append(post[:maxAfter], fmt.Sprintf("... %d later events in the history file", len(post)-maxAfter))
	}
	return append(pre, post...)
}

func (l *eventLog) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w == nil {
		return nil
	}
	err := l.w.Flush()
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.w = nil
	return err
}
