package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/zkconf/zkconf/internal/labelsel"
	"github.com/zkconf/zkconf/manifest"
)

// decodeLabels reads the labels mapping, reporting every bad key and value
// at once under "labels". Labels follow the Kubernetes label syntax
// (internal/labelsel), so canary selectors can name every label an agent
// can carry.
func decodeLabels(raw any, p *problems) map[string]string {
	if raw == nil {
		return nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		p.addf("labels", "must be a mapping of label keys to values")
		return nil
	}
	out := make(map[string]string, len(m))
	var errs []string
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		var v string
		switch t := m[k].(type) {
		case string:
			v = t
		case bool, int, int64, float64:
			v = fmt.Sprint(t)
		case nil:
		default:
			errs = append(errs, fmt.Sprintf("value of %q: must be a string", k))
			continue
		}
		if err := labelsel.CheckKey(k); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if k == manifest.LabelAgent {
			errs = append(errs, fmt.Sprintf("key %q is reserved: canary selectors match it against the agent id", k))
			continue
		}
		if err := labelsel.CheckValue(k, v); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		out[k] = v
	}
	if len(errs) > 0 {
		p.addf("labels", "%s", strings.Join(errs, "; "))
	}
	return out
}
