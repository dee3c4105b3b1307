// Package apicheck holds the test that keeps the public packages usable
// from outside the module: no exported identifier of a public package may
// mention a type of an internal package, which outside code cannot name.
package apicheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/zkconf/zkconf"

// publicPackages lists the module's packages that outside code imports.
// The test fails when a package outside internal/ and cmd/ is missing here,
// so a new public package is checked from its first commit.
func publicPackages(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "list", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []string
	for _, p := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
		if strings.Contains("/"+rel+"/", "/internal/") || strings.HasPrefix(rel, "cmd/") ||
			strings.HasPrefix(rel, "examples/") {
			continue
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// exports maps every package in the import graph of pkgs to its export data.
func exports(t *testing.T, pkgs []string) map[string]string {
	t.Helper()
	args := append([]string{"list", "-export", "-deps", "-json=ImportPath,Export"}, pkgs...)
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	m := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct{ ImportPath, Export string }
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		m[p.ImportPath] = p.Export
	}
	return m
}

func TestPublicAPIHasNoInternalTypes(t *testing.T) {
	pkgs := publicPackages(t)
	exp := exports(t, pkgs)
	imp := importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exp[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	var problems []string
	for _, path := range pkgs {
		pkg, err := imp.Import(path)
		if err != nil {
			t.Fatalf("import %s: %v", path, err)
		}
		problems = append(problems, leaks(pkg)...)
	}
	sort.Strings(problems)
	for _, p := range problems {
		t.Error(p)
	}
}

// leaks lists the exported identifiers of pkg whose signatures mention an
// internal package's type: the type of an exported var, const or func, an
// exported type's underlying type (exported fields and embedded types) and
// its exported methods, and the target of an exported alias.
func leaks(pkg *types.Package) []string {
	var out []string
	report := func(name string, t types.Type) {
		for _, p := range internalRefs(t) {
			out = append(out, fmt.Sprintf("%s.%s mentions %s", pkg.Path(), name, p))
		}
	}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch o := obj.(type) {
		case *types.TypeName:
			if o.IsAlias() {
				report(name, types.Unalias(o.Type()))
				if named, ok := types.Unalias(o.Type()).(*types.Named); ok && isInternal(named.Obj().Pkg()) {
					out = append(out, fmt.Sprintf("%s.%s is an alias of an internal type", pkg.Path(), name))
				}
				continue
			}
			report(name, o.Type().Underlying())
			if named, ok := o.Type().(*types.Named); ok {
				for i := 0; i < named.NumMethods(); i++ {
					if m := named.Method(i); m.Exported() {
						report(name+"."+m.Name(), m.Type())
					}
				}
			}
		default:
			report(name, o.Type())
		}
	}
	return out
}

func isInternal(p *types.Package) bool {
	return p != nil && strings.Contains("/"+p.Path()+"/", "/internal/")
}

// internalRefs returns the internal types t mentions, walking into
// composite types but not into the underlying types of named ones (a
// public named type is checked where it is declared). Unexported struct
// fields and unexported interface methods are not part of the API.
func internalRefs(t types.Type) []string {
	var refs []string
	seen := map[types.Type]bool{}
	var walk func(types.Type)
	walk = func(t types.Type) {
		if t == nil || seen[t] {
			return
		}
		seen[t] = true
		switch t := t.(type) {
		case *types.Alias:
			walk(types.Unalias(t))
		case *types.Named:
			if isInternal(t.Obj().Pkg()) {
				refs = append(refs, t.Obj().Pkg().Path()+"."+t.Obj().Name())
			}
			if args := t.TypeArgs(); args != nil {
				for i := 0; i < args.Len(); i++ {
					walk(args.At(i))
				}
			}
		case *types.Pointer:
			walk(t.Elem())
		case *types.Slice:
			walk(t.Elem())
		case *types.Array:
			walk(t.Elem())
		case *types.Map:
			walk(t.Key())
			walk(t.Elem())
		case *types.Chan:
			walk(t.Elem())
		case *types.Signature:
			for i := 0; i < t.Params().Len(); i++ {
				walk(t.Params().At(i).Type())
			}
			for i := 0; i < t.Results().Len(); i++ {
				walk(t.Results().At(i).Type())
			}
		case *types.Struct:
			for i := 0; i < t.NumFields(); i++ {
				if f := t.Field(i); f.Exported() || f.Embedded() {
					walk(f.Type())
				}
			}
		case *types.Interface:
			for i := 0; i < t.NumMethods(); i++ {
				if m := t.Method(i); m.Exported() {
					walk(m.Type())
				}
			}
			for i := 0; i < t.NumEmbeddeds(); i++ {
				walk(t.EmbeddedType(i))
			}
		}
	}
	walk(t)
	return refs
}
