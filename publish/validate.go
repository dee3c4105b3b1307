package publish

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"gopkg.in/yaml.v3"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/errlist"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/internal/safeyaml"
	"github.com/zkconf/zkconf/manifest"
)

// ValidateOptions says what Validate checks besides names and sizes.
type ValidateOptions struct {
	// AllowEmpty accepts a set with no items.
	AllowEmpty bool
	// Syntax parses items by extension: .json as JSON, .yaml/.yml as YAML
	// (every document), .toml as TOML.
	Syntax bool
	// MaxItemSize bounds each item; 0 means ItemLimit. Larger values are
	// capped at ItemLimit: a znode cannot hold more.
	MaxItemSize int64
	// MaxSetSize bounds the set's total size; 0 means DefaultMaxSetSize.
	MaxSetSize int64
}

// Validate checks a set before anything is written: every name can be an
// item (manifest.ValidateName), every item fits a znode, the total fits the
// set limit, the set is not empty (unless AllowEmpty) and, with Syntax,
// every JSON/YAML/TOML item parses. It reports every problem at once, as a
// *multierror.Error whose entries each name their item and match
// ErrInvalidInput (size problems are *TooLargeError). Messages never quote
// item content: parse errors give a line and column only.
func Validate(items map[string][]byte, opts ValidateOptions) error {
	errs := validateItems(items, opts)
	if len(errs) == 0 && len(items) > 0 {
		// Publish checks this exactly for its root; here with generous
		// path and publisher lengths.
		l := layout.New("/"+strings.Repeat("r", 63), "/"+strings.Repeat("m", 63))
		if err := manifestProblem(hashItems(items), strings.Repeat("p", 64), 0, l, zk.WorldACL(zk.PermAll), DefaultMultiBudget); err != nil {
			errs = append(errs, err)
		}
	}
	return errlist.Join(errs...)
}

// validateItems is Validate without the manifest size check: names, item
// and set sizes, emptiness, syntax.
func validateItems(items map[string][]byte, opts ValidateOptions) []error {
	itemLimit := opts.MaxItemSize
	if itemLimit <= 0 || itemLimit > ItemLimit {
		itemLimit = ItemLimit
	}
	setLimit := opts.MaxSetSize
	if setLimit <= 0 {
		setLimit = DefaultMaxSetSize
	}
	var errs []error
	if len(items) == 0 && !opts.AllowEmpty {
		errs = append(errs, &InputError{Err: errors.New("the set is empty (no items); an empty set is only published when explicitly allowed (AllowEmpty, --allow-empty)")})
	}
	var total int64
	for _, name := range slices.Sorted(maps.Keys(items)) {
		data := items[name]
		total += int64(len(data))
		if err := manifest.ValidateName(name); err != nil {
			errs = append(errs, &InputError{Err: fmt.Errorf("bad item name: %w", err)})
			continue
		}
		if int64(len(data)) > itemLimit {
			errs = append(errs, &TooLargeError{What: "item", Item: name, Size: int64(len(data)), Limit: itemLimit,
				Hint: "split it into smaller items"})
			continue
		}
		if opts.Syntax {
			if err := checkSyntax(name, data); err != nil {
				errs = append(errs, &InputError{Item: name, Err: err})
			}
		}
	}
	if total > setLimit {
		errs = append(errs, &TooLargeError{What: "set", Size: total, Limit: setLimit})
	}
	return errs
}

// hashItems returns the manifest entry of every item: the one place a
// publish hashes its set.
func hashItems(items map[string][]byte) map[string]manifest.Item {
	out := make(map[string]manifest.Item, len(items))
	for n, d := range items {
		out[n] = manifest.ItemOf(d)
	}
	return out
}

// manifestProblem reports a manifest too large for one znode, or for the
// marker-mode final commit that carries it twice with a Check per blob.
// hashed is the set's manifest entries (hashItems).
func manifestProblem(hashed map[string]manifest.Item, publisher string, rollbackOf int64, l layout.Paths, acl []zk.ACL, budget int) error {
	m := &manifest.Manifest{
		Format: manifest.FormatVersion, Generation: 1 << 62, PublishID: strings.Repeat("f", 32),
		PublishedAt: time.Now(), Publisher: publisher, Mode: manifest.ModeMarker,
		RollbackOf: max(rollbackOf, 1<<62), Incarnation: strings.Repeat("f", 32), Items: hashed,
	}
	mb := m.Encode()
	hint := "publish fewer items (or shorter names)"
	if len(mb) > ItemLimit {
		return &TooLargeError{What: "manifest", Size: int64(len(mb)), Limit: ItemLimit, Hint: hint}
	}
	ops := []any{
		&zk.SetDataRequest{Path: l.Root, Data: mb},
		&zk.DeleteRequest{Path: l.Marker()},
		&zk.CreateRequest{Path: l.HistoryNode(m.Generation), Data: mb, Acl: acl},
	}
	seen := map[string]bool{}
	for _, it := range m.Items {
		if !seen[it.SHA256] {
			seen[it.SHA256] = true
			ops = append(ops, &zk.CheckVersionRequest{Path: l.Blob(it.SHA256)})
		}
	}
	if size := multiSize(ops); size > budget {
		return &TooLargeError{What: "manifest", Size: int64(size), Limit: int64(budget), Hint: hint}
	}
	return nil
}

// checkSyntax parses data by the extension of name.
func checkSyntax(name string, data []byte) error {
	switch strings.ToLower(path.Ext(name)) {
	case ".json":
		return checkJSON(data)
	case ".yaml", ".yml":
		return checkYAML(data)
	case ".toml":
		return checkTOML(data)
	}
	return nil
}

func checkJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	var v any
	err := dec.Decode(&v)
	if err == nil {
		// Exactly one value: anything but whitespace after it is an error.
		if _, terr := dec.Token(); terr != io.EOF {
			off := dec.InputOffset()
			line, col := lineCol(data, off)
			return fmt.Errorf("invalid JSON at line %d, column %d: data after the top-level value", line, col)
		}
		return nil
	}
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		// Offset is just past the offending byte.
		line, col := lineCol(data, se.Offset-1)
		return fmt.Errorf("invalid JSON at line %d, column %d: %s", line, col, redact(se.Error()))
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		line, col := lineCol(data, int64(len(data)))
		return fmt.Errorf("invalid JSON at line %d, column %d: unexpected end of input", line, col)
	default:
		return fmt.Errorf("invalid JSON: %s", redact(err.Error()))
	}
}

// yamlLine finds "line N" in a yaml.v3 error.
var yamlLine = regexp.MustCompile(`line (\d+)`)

func checkYAML(data []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for doc := 1; ; doc++ {
		var n yaml.Node
		err := dec.Decode(&n)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			msg := strings.TrimPrefix(redact(err.Error()), "yaml: ")
			if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
				msg = strings.TrimPrefix(msg, "line "+m[1]+": ")
				return fmt.Errorf("invalid YAML at line %s (document %d): %s", m[1], doc, msg)
			}
			return fmt.Errorf("invalid YAML (document %d): %s", doc, msg)
		}
		// The agents' YAML reader refuses duplicate keys (and alias bombs):
		// refuse them here too, not on every host after the publish.
		if err := safeyaml.CheckNode(&n, safeyaml.LimitsFor(data, 100)); err != nil {
			var se *safeyaml.SyntaxError
			if errors.As(err, &se) {
				return fmt.Errorf("invalid YAML at line %d (document %d): unparsable value", se.Line, doc)
			}
			return fmt.Errorf("invalid YAML (document %d): %w", doc, err)
		}
	}
}

func checkTOML(data []byte) error {
	var v map[string]any
	_, err := toml.Decode(string(data), &v)
	if err == nil {
		return nil
	}
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("invalid TOML at line %d, column %d: %s", pe.Position.Line, pe.Position.Col, redact(pe.Message))
	}
	return fmt.Errorf("invalid TOML: %s", redact(err.Error()))
}

// quoted matches the quoted fragments parsers put in their messages, which
// may be pieces of the content (a secret, say).
var quoted = regexp.MustCompile("'(?:\\\\.|[^'\\\\])*'|\"(?:\\\\.|[^\"\\\\])*\"|`[^`]*`")

// redact removes quoted fragments from a parser message, keeping only a
// quoted single punctuation character (the grammar's "expected ':'").
func redact(msg string) string {
	return quoted.ReplaceAllStringFunc(msg, func(q string) string {
		inner := q[1 : len(q)-1]
		if len(inner) == 1 && strings.ContainsAny(inner, ":,;{}[]()=<>#&*!|-?\\") {
			return q
		}
		return "(…)"
	})
}

// lineCol converts a byte offset into a 1-based line and column.
func lineCol(data []byte, off int64) (int, int) {
	off = max(0, min(off, int64(len(data))))
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}
