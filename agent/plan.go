package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/zkconf/zkconf/internal/errlist"
	"github.com/zkconf/zkconf/internal/render"
)

// Change is one file that applying a snapshot would create, change or
// remove. Old is nil for a new file, New is nil for a removed one.
type Change struct {
	Target string
	Path   string
	Old    []byte
	New    []byte
}

// Plan renders snap for every target in memory and returns what applying
// it would change, writing nothing: confagent --dry-run.
func (r *Renderer) Plan(snap Snapshot) ([]Change, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var changes []Change
	var errs []error
	for _, t := range r.targets {
		if t.spec.Kind == KindDir {
			cur, err := render.ReadCurrent(t.spec.Dest)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("target %q: %w", t.spec.Name, err))
				continue
			}
			next := t.selected(snap)
			for _, name := range sortedUnion(cur, next) {
				o, inOld := cur[name]
				n, inNew := next[name]
				if inOld && inNew && string(o) == string(n) {
					continue
				}
				c := Change{Target: t.spec.Name, Path: filepath.Join(t.spec.Dest, name)}
				if inOld {
					c.Old = o
				}
				if inNew {
					c.New = n
				}
				changes = append(changes, c)
			}
			continue
		}
		next, err := t.output(context.Background(), snap)
		if err != nil {
			errs = append(errs, fmt.Errorf("target %q: %w", t.spec.Name, err))
			continue
		}
		cur, err := os.ReadFile(t.spec.Dest)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("target %q: %w", t.spec.Name, err))
			continue
		}
		if err == nil && string(cur) == string(next) {
			continue
		}
		changes = append(changes, Change{Target: t.spec.Name, Path: t.spec.Dest, Old: cur, New: next})
	}
	return changes, errlist.Join(errs...)
}

func sortedUnion(a, b map[string][]byte) []string {
	var names []string
	for n := range a {
		names = append(names, n)
	}
	for n := range b {
		if _, ok := a[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}
