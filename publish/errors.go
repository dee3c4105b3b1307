package publish

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Sentinel errors. Every typed error below matches one of them with
// errors.Is, so callers can branch without type assertions.
var (
	// ErrConflict means another publish won: the root's version moved
	// between our read and our commit, the live generation is not the one
	// the request expected, or another publish took our marker over. The
	// error is a *ConflictError carrying the live generation.
	ErrConflict = errors.New("publish conflict")
	// ErrMarkerBusy means a live marker-mode publish holds the root's
	// marker. The error is a *MarkerBusyError naming its owner and age.
	ErrMarkerBusy = errors.New("another marker-mode publish is in progress")
	// ErrTooLarge means an item, the set, the manifest or the transaction
	// exceeds what ZooKeeper (or the configured limit) can take. The error
	// is a *TooLargeError with the size and the limit. Nothing was written.
	ErrTooLarge = errors.New("too large")
	// ErrInvalidInput marks every input problem (bad name, unreadable file,
	// empty set, syntax, size): the CLI maps it to its usage exit code.
	ErrInvalidInput = errors.New("invalid input")
	// ErrNotPublished means the root does not exist or holds no manifest.
	ErrNotPublished = errors.New("root has never been published")
	// ErrGenerationNotFound means the requested generation is not in the
	// history (never existed, or removed by retention).
	ErrGenerationNotFound = errors.New("generation not in history")
	// ErrOutcomeUnknown means a commit was sent and whether it landed could
	// not be determined (the context ended, or the connection was closed
	// by the application). The error names the publish id and generation
	// to look for in the history.
	ErrOutcomeUnknown = errors.New("publish outcome unknown")
	// ErrFenced means Request.Fence does not exist (any more): the
	// publisher lost what entitled it to publish (a leader's election
	// node). Nothing of the write that found it gone was applied.
	ErrFenced = errors.New("publish fenced off")
	// ErrGenerationExhausted means the root is at the largest generation
	// an int64 holds: the next one would wrap to a negative number, so
	// nothing is published to that root any more. Nothing was written.
	ErrGenerationExhausted = errors.New("generation numbers exhausted")
	// ErrWouldRemove means a publish with Request.NoRemove would have
	// removed items of the live generation. The error is a *RemovalError
	// listing them. Nothing was written.
	ErrWouldRemove = errors.New("publish would remove live items")
)

// ConflictError reports a lost compare-and-swap or an ExpectGeneration
// mismatch. It matches ErrConflict.
type ConflictError struct {
	// Expected is the generation the publish was based on (or the one the
	// request expected).
	Expected int64
	// Actual is the live generation found after the conflict (0 when the
	// root holds no manifest).
	Actual int64
	// Reason says what happened.
	Reason string
}

// Error describes the conflict and both generations.
func (e *ConflictError) Error() string {
	return fmt.Sprintf("conflict: %s (expected generation %d, live generation is %d)", e.Reason, e.Expected, e.Actual)
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// MarkerBusyError reports a live marker-mode publish. It matches
// ErrMarkerBusy.
type MarkerBusyError struct {
	// Root is the config root.
	Root string
	// Owner is the publisher (user@host) that set the marker.
	Owner string
	// PublishID is the publish attempt that holds the marker.
	PublishID string
	// Age is how long ago the marker was set (by the marker node's
	// modification time against the local clock; clocks may differ).
	Age time.Duration
}

// Error describes the marker's owner, publish id and age.
func (e *MarkerBusyError) Error() string {
	return fmt.Sprintf("%v: marker %s/invalid held by %s (publish %s) for %v; wait for it, or override it explicitly (OverrideMarker, --override-marker)",
		ErrMarkerBusy, e.Root, e.Owner, e.PublishID, e.Age.Round(time.Millisecond))
}

// Is makes errors.Is(err, ErrMarkerBusy) true.
func (e *MarkerBusyError) Is(target error) bool { return target == ErrMarkerBusy }

// TooLargeError reports a size limit exceeded. It matches ErrTooLarge and
// ErrInvalidInput.
type TooLargeError struct {
	// What is "item", "set", "manifest" or "transaction".
	What string
	// Item names the item when What is "item".
	Item string
	// Size is the offending size in bytes; Limit the limit.
	Size, Limit int64
	// Hint says what to do, when there is something to say.
	Hint string
}

// Error describes the size and the limit.
func (e *TooLargeError) Error() string {
	var s string
	switch e.What {
	case "item":
		s = fmt.Sprintf("item %q is %d bytes, more than the %d-byte limit of one znode", e.Item, e.Size, e.Limit)
	case "set":
		s = fmt.Sprintf("the set is %d bytes in total, more than the %d-byte limit", e.Size, e.Limit)
	case "manifest":
		s = fmt.Sprintf("the manifest (and the final commit carrying it) would be %d bytes, more than the %d-byte limit", e.Size, e.Limit)
	default:
		s = fmt.Sprintf("the %s would be %d bytes, more than the %d-byte limit", e.What, e.Size, e.Limit)
	}
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

// Is makes errors.Is work with ErrTooLarge and ErrInvalidInput.
func (e *TooLargeError) Is(target error) bool {
	return target == ErrTooLarge || target == ErrInvalidInput
}

// InputError is one problem with the input: a file that cannot be read, a
// name that cannot be an item, content that does not parse. It never
// quotes item content. It matches ErrInvalidInput.
type InputError struct {
	// Item is the item name, when known.
	Item string
	// Path is the file, when the problem is with a file.
	Path string
	// Err is the problem.
	Err error
}

// Error describes the item or file and the problem.
func (e *InputError) Error() string {
	switch {
	case e.Item != "" && e.Path != "":
		return fmt.Sprintf("item %q (%s): %v", e.Item, e.Path, e.Err)
	case e.Item != "":
		return fmt.Sprintf("item %q: %v", e.Item, e.Err)
	case e.Path != "":
		return fmt.Sprintf("%s: %v", e.Path, e.Err)
	default:
		return e.Err.Error()
	}
}

// Unwrap returns the underlying problem.
func (e *InputError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrInvalidInput) true.
func (e *InputError) Is(target error) bool { return target == ErrInvalidInput }

// blobRaceError is returned by a commit that failed only because the blob
// store was not as planned: a blob of departing content it checks is
// missing (its publisher stopped after its acknowledgement, before storing
// it), or a blob it meant to create exists (someone stored it meanwhile),
// or the history parent is gone. Nothing was applied; the commit is sent
// again with the blob ops refreshed, or Publish re-plans.
type blobRaceError struct {
	path string
	sha  string // the blob's content hash; "" for the history parent
}

func (e *blobRaceError) Error() string {
	return fmt.Sprintf("blob store changed concurrently (%s); commit not applied", e.path)
}

// strayError is returned by a write that deleted a directory of the
// tree and found it not empty: a node zkconf did not write (a stray) was
// created under it since it was listed. Nothing of a transaction that
// failed so was applied: the publisher lists the directory again, keeps
// it (and the directories above it) and sends the commit again, at most
// maxStrayRounds times.
type strayError struct {
	path string // the directory's node
	dir  string // its path relative to the root
}

func (e *strayError) Error() string {
	return fmt.Sprintf("directory %s is not empty: a node zkconf did not write was created under it; it stays", e.path)
}

// RemovalError reports the live items a publish with Request.NoRemove
// would have removed. It matches ErrWouldRemove and names items, never
// their content.
type RemovalError struct {
	// Root is the config root.
	Root string
	// Generation is the live generation the set was compared with.
	Generation int64
	// Items are the live items missing from the set, sorted.
	Items []string
}

// Error lists the items (the first 20, and how many more) and says how
// to remove them on purpose.
func (e *RemovalError) Error() string {
	const shown = 20
	names := strings.Join(e.Items[:min(len(e.Items), shown)], ", ")
	if len(e.Items) > shown {
		names += fmt.Sprintf(" and %d more", len(e.Items)-shown)
	}
	return fmt.Sprintf("refusing to publish: it would remove %d item(s) of live generation %d of %s missing from the set: %s; include them to keep them, or allow the removal (--prune; NoRemove false)",
		len(e.Items), e.Generation, e.Root, names)
}

// Is makes errors.Is(err, ErrWouldRemove) true.
func (e *RemovalError) Is(target error) bool { return target == ErrWouldRemove }
