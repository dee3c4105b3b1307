package confd

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestEffectivePrefix(t *testing.T) {
	for _, tc := range []struct{ resource, global, want string }{
		{"", "", "/"},
		{"app", "", "/app"},
		{"/app", "", "/app"},
		{"/app/", "", "/app/"}, // not cleaned
		{"/app", "/global", "/global"},
		{"/app", "global", "/global"}, // confd's prefix replaces the resource's
		{"", "/global", "/global"},
	} {
		if got := (Resource{Prefix: tc.resource}).EffectivePrefix(tc.global); got != tc.want {
			t.Errorf("EffectivePrefix(resource %q, confd %q) = %q, want %q", tc.resource, tc.global, got, tc.want)
		}
	}
}

// resourceTree is a ZooKeeper tree as nodes and their data: /myapp/upstream
// has data and children (confd never reads it), /myapp/empty is a childless
// node without data, /myapplication shares a string prefix with /myapp.
var resourceTree = map[string]string{
	"/myapp/database/host": "db",
	"/myapp/database/port": "5432",
	"/myapp/upstream":      "intermediate data",
	"/myapp/upstream/a":    "10.0.0.1",
	"/myapp/upstream/b":    "10.0.0.2",
	"/myapp/empty":         "",
	"/myapplication/y":     "2",
	"/other/x":             "1",
}

func TestResourceView(t *testing.T) {
	for _, tc := range []struct {
		name   string
		r      Resource
		global string
		want   string // sorted "key=value" lines, or the error
	}{
		{"prefix and keys", Resource{"/myapp", []string{"/database", "/upstream"}}, "",
			"/database/host=db /database/port=5432 /upstream/a=10.0.0.1 /upstream/b=10.0.0.2"},
		{"the whole prefix", Resource{"/myapp", []string{"/"}}, "",
			"/database/host=db /database/port=5432 /empty= /upstream/a=10.0.0.1 /upstream/b=10.0.0.2"},
		{"keys without a slash", Resource{"myapp", []string{"database"}}, "",
			"/database/host=db /database/port=5432"},
		{"a /* key is its directory", Resource{"/myapp", []string{"/upstream/*"}}, "",
			"/upstream/a=10.0.0.1 /upstream/b=10.0.0.2"},
		{"a leaf key", Resource{"/myapp", []string{"/database/host"}}, "", "/database/host=db"},
		{"overlapping keys", Resource{"/myapp", []string{"/database", "/database/port"}}, "",
			"/database/host=db /database/port=5432"},
		{"no prefix: full paths", Resource{"", []string{"/myapp/database"}}, "",
			"/myapp/database/host=db /myapp/database/port=5432"},
		{"confd's prefix replaces the resource's", Resource{"/myapp", []string{"/"}}, "/other", "/x=1"},
		{"a trailing slash on the prefix", Resource{"/myapp/", []string{"/database"}}, "",
			"/database/host=db /database/port=5432"},
		// The prefix is stripped as a string, uncleaned: "/myapp//" is
		// not a string prefix of "/myapp/database/host".
		{"an unclean prefix is not stripped", Resource{"/myapp//", []string{"/database"}}, "",
			"/myapp/database/host=db /myapp/database/port=5432"},
		{"the prefix node itself as a leaf", Resource{"/myapp/empty", []string{"/"}}, "", "/="},
		{"a missing key fails the resource", Resource{"/myapp", []string{"/database", "/nope"}}, "",
			`resource key "/nope": no node /myapp/nope (confd's ZooKeeper backend fails the resource: zk: node does not exist)`},
		{"/* under the root is the empty path", Resource{"", []string{"/*"}}, "",
			`resource key "/*": becomes the empty path (confd's ZooKeeper backend fails the resource: zk: invalid path)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			view, err := tc.r.View(tc.global, resourceTree)
			got := describe(view)
			if err != nil {
				got = err.Error()
				var mk *MissingKeyError
				if !errors.As(err, &mk) || view != nil {
					t.Errorf("error %v is not a *MissingKeyError or a view came with it", err)
				}
			}
			if got != tc.want {
				t.Errorf("View(%+v, confd prefix %q)\n got: %s\nwant: %s", tc.r, tc.global, got, tc.want)
			}
		})
	}
}

func describe(m map[string]string) string {
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		lines = append(lines, fmt.Sprintf("%s=%s", k, m[k]))
	}
	return strings.Join(lines, " ")
}
