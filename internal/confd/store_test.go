package confd

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"testing"
)

// testTree has the shapes memkv's List and ListDir treat differently: leaves
// beside directories, names sharing a string prefix ("services",
// "services_old", "svc"), keys of different depths, an empty value and a
// leaf at the root.
var testTree = map[string]string{
	"/app/name":                   "demo",
	"/app/database/host":          "db1.internal",
	"/app/database/port":          "5432",
	"/app/database/pass":          "",
	"/app/upstream/web1":          "10.0.0.1:80",
	"/app/upstream/web2":          "10.0.0.2:80",
	"/app/upstream/web10":         "10.0.0.10:80",
	"/app/services/readme":        "services",
	"/app/services/api/node1":     "10.1.0.1:8080",
	"/app/services/api/node2":     "10.1.0.2:8080",
	"/app/services/web/node1":     "10.2.0.1:80",
	"/app/services_old/api/node1": "old",
	"/app/svc/x":                  "1",
	"/top":                        "t",
}

func TestGet(t *testing.T) {
	s := NewStore(testTree)
	for _, tc := range []struct {
		key  string
		want string // "Key=Value", or the error
	}{
		{"/app/database/host", "/app/database/host=db1.internal"},
		{"/app/database/pass", "/app/database/pass="}, // an empty value exists
		{"/top", "/top=t"},
		{"/app/database", "key does not exist: /app/database"}, // a directory is not a key
		{"/app/database/host/", "key does not exist: /app/database/host/"},
		{"app/database/host", "key does not exist: app/database/host"},
		{"/app//database/host", "key does not exist: /app//database/host"},
		{"", "key does not exist: "},
	} {
		kv, err := s.Get(tc.key)
		got := kv.Key + "=" + kv.Value
		if err != nil {
			got = err.Error()
			if !errors.Is(err, ErrNotExist) || kv != (KVPair{}) {
				t.Errorf("Get(%q): error %v is not ErrNotExist or pair %v not empty", tc.key, err, kv)
			}
		}
		if got != tc.want {
			t.Errorf("Get(%q) = %q, want %q", tc.key, got, tc.want)
		}
		if exists := err == nil; s.Exists(tc.key) != exists {
			t.Errorf("Exists(%q) = %v, want %v", tc.key, !exists, exists)
		}
	}
}

func TestGetValue(t *testing.T) {
	s := NewStore(testTree)
	for _, tc := range []struct {
		key      string
		defaults []string
		want     string
	}{
		{"/app/database/port", nil, "5432"},
		{"/app/database/port", []string{"1"}, "5432"},
		{"/app/database/pass", []string{"default"}, ""}, // stored empty: not the default
		{"/nope", nil, "error: key does not exist: /nope"},
		{"/nope", []string{"fallback"}, "fallback"},
		{"/nope", []string{""}, ""},
		{"/nope", []string{"first", "second"}, "first"},
	} {
		v, err := s.GetValue(tc.key, tc.defaults...)
		if err != nil {
			v = "error: " + err.Error()
		}
		if v != tc.want {
			t.Errorf("GetValue(%q, %q) = %q, want %q", tc.key, tc.defaults, v, tc.want)
		}
	}
}

func TestGetAll(t *testing.T) {
	s := NewStore(testTree)
	for _, tc := range []struct {
		pattern string
		want    string // pairs as printed by a template, or the error
		values  string // GetAllValues: sorted by value
	}{
		// By key: web1 < web10 < web2. By value: "10.0.0.10:80" < "10.0.0.1:80" ('0' < ':').
		{"/app/upstream/*", "[{/app/upstream/web1 10.0.0.1:80} {/app/upstream/web10 10.0.0.10:80} {/app/upstream/web2 10.0.0.2:80}]",
			"[10.0.0.10:80 10.0.0.1:80 10.0.0.2:80]"},
		{"/app/upstream/web?", "[{/app/upstream/web1 10.0.0.1:80} {/app/upstream/web2 10.0.0.2:80}]",
			"[10.0.0.1:80 10.0.0.2:80]"},
		{"/app/database/*", "[{/app/database/host db1.internal} {/app/database/pass } {/app/database/port 5432}]",
			"[ 5432 db1.internal]"},
		// "*" stops at "/": one level only.
		{"/app/*", "[{/app/name demo}]", "[demo]"},
		{"/*", "[{/top t}]", "[t]"},
		{"/app/services/*/node1", "[{/app/services/api/node1 10.1.0.1:8080} {/app/services/web/node1 10.2.0.1:80}]",
			"[10.1.0.1:8080 10.2.0.1:80]"},
		{"/app/database/host", "[{/app/database/host db1.internal}]", "[db1.internal]"},
		{"/app/missing/*", "[]", "[]"},
		{"/app/database", "[]", "[]"},
		{"[", "syntax error in pattern", "syntax error in pattern"},
	} {
		kvs, err := s.GetAll(tc.pattern)
		got := fmt.Sprint(kvs)
		if err != nil {
			got = err.Error()
			if !errors.Is(err, path.ErrBadPattern) {
				t.Errorf("GetAll(%q): %v is not path.ErrBadPattern", tc.pattern, err)
			}
		}
		if got != tc.want {
			t.Errorf("GetAll(%q) = %s, want %s", tc.pattern, got, tc.want)
		}
		vs, err := s.GetAllValues(tc.pattern)
		got = fmt.Sprint(vs)
		if err != nil {
			got = err.Error()
		}
		if got != tc.values {
			t.Errorf("GetAllValues(%q) = %s, want %s", tc.pattern, got, tc.values)
		}
	}
	// A malformed pattern fails only when there is a key to match it
	// against: memkv calls path.Match once per key.
	if kvs, err := NewStore(nil).GetAll("["); err != nil || len(kvs) != 0 {
		t.Errorf("GetAll on an empty store = %v, %v; want [], nil", kvs, err)
	}
}

func TestList(t *testing.T) {
	s := NewStore(testTree)
	for _, tc := range []struct {
		dir         string
		list, lsdir string
	}{
		// Leaves and directories below; "services_old" shares a string
		// prefix, not a path.
		{"/app/services", "[api readme web]", "[api web]"},
		{"/app/services/", "[api readme web]", "[api web]"},
		{"/app", "[database name services services_old svc upstream]", "[database services services_old svc upstream]"},
		{"/app/services/api", "[node1 node2]", "[]"},
		// A leaf lists its own name; with a trailing slash, nothing.
		{"/app/services/readme", "[readme]", "[]"},
		{"/app/services/readme/", "[]", "[]"},
		// The root lists only the leaves directly below it, and lsdir of
		// the root is always empty: memkv compares the terms of "/"
		// (["" ""]) with a key's parent, and only "/x" has the parent "/".
		{"/", "[top]", "[]"},
		{"", "[]", "[]"},
		{"app/services", "[]", "[]"},
		{"/nope", "[]", "[]"},
		// An unclean path: the terms compare the cleaned path, but List
		// strips the raw one, so the names come out as the keys' first
		// element; ListDir's raw string prefix test matches nothing.
		{"/app//services", "[app]", "[]"},
	} {
		if got := fmt.Sprint(s.List(tc.dir)); got != tc.list {
			t.Errorf("List(%q) = %s, want %s", tc.dir, got, tc.list)
		}
		if got := fmt.Sprint(s.ListDir(tc.dir)); got != tc.lsdir {
			t.Errorf("ListDir(%q) = %s, want %s", tc.dir, got, tc.lsdir)
		}
	}
}

// TestStoreCopiesItsInput: a store is immutable; the caller's map may
// change afterwards.
func TestStoreCopiesItsInput(t *testing.T) {
	m := map[string]string{"/a": "1"}
	s := NewStore(m)
	m["/a"] = "2"
	m["/b"] = "3"
	if v, _ := s.GetValue("/a"); v != "1" || s.Exists("/b") {
		t.Fatalf("the store follows its input map: /a=%q, /b exists %v", v, s.Exists("/b"))
	}
}

func TestKeyErrorMessage(t *testing.T) {
	_, err := NewStore(nil).Get("/x")
	var ke *KeyError
	if !errors.As(err, &ke) || ke.Key != "/x" || !strings.HasPrefix(err.Error(), "key does not exist") {
		t.Fatalf("Get of a missing key: %#v", err)
	}
}
