package confd

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/template"
)

// Host is what the host-dependent functions read. The package never looks
// at the host itself: whoever renders passes these in (the agent passes
// os.Getenv and StatExists), so a render is a function of its inputs.
type Host struct {
	// Getenv returns an environment variable, "" when unset (getenv);
	// nil makes every variable unset.
	Getenv func(key string) string
	// FileExists reports whether a path exists (fileExists); nil makes
	// every path missing.
	FileExists func(path string) bool
}

// StatExists is confd's fileExists (util.IsFileExist): false only when
// os.Stat says the path does not exist, so a path it may not stat (a
// permission error) exists.
func StatExists(p string) bool {
	_, err := os.Stat(p)
	return !os.IsNotExist(err)
}

// FuncMap returns confd's template functions reading s and h, with
// confd's names, argument types and results (resource/template/
// template_funcs.go newFuncMap, and memkv's Store.FuncMap for the key
// functions). The functions confd has and zkconf refuses (Refused) are
// present as stubs that fail, so that Parse can name every use at once.
func FuncMap(s *Store, h Host) template.FuncMap {
	getenv := h.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	fileExists := h.FileExists
	if fileExists == nil {
		fileExists = func(string) bool { return false }
	}
	m := template.FuncMap{
		// memkv Store.FuncMap
		"exists": s.Exists,
		"ls":     s.List,
		"lsdir":  s.ListDir,
		"get":    s.Get,
		"gets":   s.GetAll,
		"getv":   s.GetValue,
		"getvs":  s.GetAllValues,

		// template_funcs.go newFuncMap
		"base":      path.Base,
		"split":     strings.Split,
		"json":      unmarshalJSONObject,
		"jsonArray": unmarshalJSONArray,
		"dir":       path.Dir,
		"map":       createMap,
		"getenv": func(key string, defaults ...string) string {
			// confd's Getenv: an empty variable counts as unset.
			if v := getenv(key); v != "" {
				return v
			}
			if len(defaults) > 0 {
				return defaults[0]
			}
			return ""
		},
		"join":         strings.Join,
		"toUpper":      strings.ToUpper,
		"toLower":      strings.ToLower,
		"contains":     strings.Contains,
		"replace":      replace,
		"trimSuffix":   strings.TrimSuffix,
		"fileExists":   fileExists,
		"base64Encode": func(data string) string { return base64.StdEncoding.EncodeToString([]byte(data)) },
		"base64Decode": func(data string) (string, error) {
			b, err := base64.StdEncoding.DecodeString(data)
			return string(b), err
		},
		"parseBool":      strconv.ParseBool,
		"reverse":        reverse,
		"sortByLength":   sortByLength,
		"sortKVByLength": sortKVByLength,
		// Integer arithmetic as confd's: div and mod by zero panic, which
		// text/template reports as "error calling div: runtime error:
		// integer divide by zero".
		"add":  func(a, b int) int { return a + b },
		"sub":  func(a, b int) int { return a - b },
		"div":  func(a, b int) int { return a / b },
		"mod":  func(a, b int) int { return a % b },
		"mul":  func(a, b int) int { return a * b },
		"seq":  seq,
		"atoi": strconv.Atoi,
	}
	for name := range refused {
		m[name] = refusedStub(name)
	}
	return m
}

// createMap's errors, confd's words.
var (
	errInvalidMap = errors.New("invalid map call")
	errMapKeys    = errors.New("map keys must be strings")
)

// createMap is confd's CreateMap: "map" "k1" v1 "k2" v2 ...
func createMap(values ...interface{}) (map[string]interface{}, error) {
	if len(values)%2 != 0 {
		return nil, errInvalidMap
	}
	dict := make(map[string]interface{}, len(values)/2)
	for i := 0; i < len(values); i += 2 {
		key, ok := values[i].(string)
		if !ok {
			return nil, errMapKeys
		}
		dict[key] = values[i+1]
	}
	return dict, nil
}

// unmarshalJSONObject is confd's UnmarshalJsonObject: numbers decode as
// float64 (1000000 prints as 1e+06), "null" is a nil map, and an error is
// encoding/json's own message.
func unmarshalJSONObject(data string) (map[string]interface{}, error) {
	var ret map[string]interface{}
	err := json.Unmarshal([]byte(data), &ret)
	return ret, err
}

// unmarshalJSONArray is confd's UnmarshalJsonArray.
func unmarshalJSONArray(data string) ([]interface{}, error) {
	var ret []interface{}
	err := json.Unmarshal([]byte(data), &ret)
	return ret, err
}

// reverse is confd's Reverse: it reverses a []string or a []KVPair in
// place and returns its argument; any other type, KVPairs (what gets
// returns) included, comes back unchanged.
func reverse(values interface{}) interface{} {
	switch v := values.(type) {
	case []string:
		slices.Reverse(v)
	case []KVPair:
		slices.Reverse(v)
	}
	return values
}

type byLength []string

func (s byLength) Len() int           { return len(s) }
func (s byLength) Swap(i, j int)      { s[i], s[j] = s[j], s[i] }
func (s byLength) Less(i, j int) bool { return len(s[i]) < len(s[j]) }

// sortByLength is confd's SortByLength: sort.Sort (not sort.Stable) by
// length in bytes, in place.
func sortByLength(values []string) []string {
	sort.Sort(byLength(values))
	return values
}

type byLengthKV []KVPair

func (s byLengthKV) Len() int           { return len(s) }
func (s byLengthKV) Swap(i, j int)      { s[i], s[j] = s[j], s[i] }
func (s byLengthKV) Less(i, j int) bool { return len(s[i].Key) < len(s[j].Key) }

// sortKVByLength is confd's SortKVByLength: by key length, in place.
func sortKVByLength(values []KVPair) []KVPair {
	sort.Sort(byLengthKV(values))
	return values
}

// Bounds on results whose size a template argument, possibly a key's
// value, decides: confd has none, so a value such as "1000000000" fed to
// seq, or an empty "old" to replace, would exhaust the agent's memory.
// Within them the functions are confd's.
const (
	// MaxSeq is the most elements seq returns.
	MaxSeq = 1 << 20
	// MaxStringBytes is the largest string replace builds (zkconf's
	// template output limit).
	MaxStringBytes = 64 << 20
)

// limitError is a result refused for its size (MaxSeq, MaxStringBytes);
// its message holds numbers only.
type limitError struct{ msg string }

func (e *limitError) Error() string { return e.msg }

// seq is confd's Seq: first to last inclusive; nil when last < first
// (printed []).
func seq(first, last int) ([]int, error) {
	if last < first {
		return nil, nil
	}
	// last-first wraps negative when the distance overflows an int.
	if d := last - first; d < 0 || d >= MaxSeq {
		return nil, &limitError{fmt.Sprintf("seq %d %d: more than %d elements", first, last, MaxSeq)}
	}
	var arr []int
	for i := 0; i <= last-first; i++ { // counted: first+i never overflows
		arr = append(arr, first+i)
	}
	return arr, nil
}

// replace is strings.Replace (confd's replace), refusing a result over
// MaxStringBytes.
func replace(s, old, new string, n int) (string, error) {
	m := strings.Count(s, old) // with old "", one more than the runes of s
	if n >= 0 && n < m {
		m = n
	}
	if size := int64(len(s)) + int64(m)*(int64(len(new))-int64(len(old))); size > MaxStringBytes {
		return "", &limitError{fmt.Sprintf("replace: the result would be %d bytes, more than %d", size, MaxStringBytes)}
	}
	return strings.Replace(s, old, new, n), nil
}
