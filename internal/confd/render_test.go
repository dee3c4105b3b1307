package confd

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRenderTestdata renders each testdata/CASE as confd would: the
// resource's prefix and keys select the keys from the tree (View), the
// template (the one *.tmpl file, named by its base name as confd names
// it) is parsed with FuncMap and executed with nil data. The output must
// equal CASE/want byte for byte, or the error CASE/want-error (one line).
// The expected files were written from confd's source, not from this
// package's output.
func TestRenderTestdata(t *testing.T) {
	cases, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		dir := filepath.Join("testdata", c.Name())
		t.Run(c.Name(), func(t *testing.T) {
			var res struct {
				Prefix string
				Keys   []string
				Env    map[string]string
				Tree   map[string]string
			}
			readJSON(t, filepath.Join(dir, "resource.json"), &res)
			tmpls, err := filepath.Glob(filepath.Join(dir, "*.tmpl"))
			if err != nil || len(tmpls) != 1 {
				t.Fatalf("%s: want one *.tmpl, have %v (%v)", dir, tmpls, err)
			}
			text, err := os.ReadFile(tmpls[0])
			if err != nil {
				t.Fatal(err)
			}

			view, err := Resource{Prefix: res.Prefix, Keys: res.Keys}.View("", res.Tree)
			if err != nil {
				t.Fatal(err)
			}
			host := Host{Getenv: func(k string) string { return res.Env[k] }}
			tmpl, err := Parse(filepath.Base(tmpls[0]), string(text), FuncMap(NewStore(view), host))
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			err = tmpl.Execute(&out, nil)

			if want, rerr := os.ReadFile(filepath.Join(dir, "want-error")); rerr == nil {
				if err == nil || err.Error() != strings.TrimSuffix(string(want), "\n") {
					t.Fatalf("error:\n got: %v\nwant: %s", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join(dir, "want"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Fatalf("output differs from %s/want\n got: %q\nwant: %q", dir, out.Bytes(), want)
			}
		})
	}
}

func readJSON(t *testing.T, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}
