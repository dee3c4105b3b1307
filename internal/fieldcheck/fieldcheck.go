// Package fieldcheck is test support for field-by-field conversions
// between a public struct and its internal twin (agent.TargetSpec and
// targets.Spec): Fill sets every field, Same compares by field name, so a
// field added to one side and not copied fails a test.
package fieldcheck

import (
	"reflect"
	"testing"
)

// Fill sets every field of the struct p points to (nested structs too) to
// a non-zero value.
func Fill(t testing.TB, p any) {
	t.Helper()
	fill(t, reflect.ValueOf(p).Elem())
}

func fill(t testing.TB, v reflect.Value) {
	t.Helper()
	for i := range v.NumField() {
		f, name := v.Field(i), v.Type().Field(i).Name
		switch {
		case f.Kind() == reflect.String:
			f.SetString(name)
		case f.CanInt():
			f.SetInt(int64(i + 1))
		case f.CanUint():
			f.SetUint(uint64(i + 1)) // #nosec G115 -- a field index, non-negative
		case f.Kind() == reflect.Bool:
			f.SetBool(true)
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.String:
			f.Set(reflect.ValueOf([]string{name}).Convert(f.Type()))
		case f.Kind() == reflect.Struct:
			fill(t, f)
		default:
			t.Fatalf("field %s: kind %s not filled", name, f.Kind())
		}
	}
}

// Same fails t unless b (a struct) has every field of a, by name, with an
// equal value (nested structs compared field by field), and no other.
func Same(t testing.TB, a, b any) {
	t.Helper()
	same(t, reflect.TypeOf(a).String(), reflect.ValueOf(a), reflect.ValueOf(b))
}

func same(t testing.TB, what string, a, b reflect.Value) {
	t.Helper()
	if a.NumField() != b.NumField() {
		t.Errorf("%s: %d fields, converted to %s's %d", what, a.NumField(), b.Type(), b.NumField())
	}
	for i := range a.NumField() {
		name := a.Type().Field(i).Name
		fb := b.FieldByName(name)
		if !fb.IsValid() {
			t.Errorf("%s.%s: no such field in %s", what, name, b.Type())
			continue
		}
		if fa := a.Field(i); fa.Kind() == reflect.Struct {
			same(t, what+"."+name, fa, fb)
		} else if !reflect.DeepEqual(fa.Interface(), fb.Interface()) {
			t.Errorf("%s.%s = %v, converted to %v", what, name, fa.Interface(), fb.Interface())
		}
	}
}
