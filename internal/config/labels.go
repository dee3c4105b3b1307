package config

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Label syntax, as Kubernetes defines it: a key is an optional DNS
// subdomain prefix and "/", then a name of at most 63 characters; a value
// is empty or a name. Canary rollouts select agents by labels, so the
// syntax is the one selectors elsewhere already understand.
var (
	labelName   = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
	labelPrefix = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// checkLabelKey reports why k is not a valid label key.
func checkLabelKey(k string) error {
	name := k
	if prefix, rest, ok := strings.Cut(k, "/"); ok {
		if len(prefix) > 253 || !labelPrefix.MatchString(prefix) {
			return fmt.Errorf("key %q: the prefix before '/' must be a DNS subdomain (lowercase, at most 253 characters)", k)
		}
		name = rest
	}
	if len(name) > 63 || !labelName.MatchString(name) {
		return fmt.Errorf("key %q: the name must be 1-63 characters [A-Za-z0-9-_.], starting and ending alphanumeric", k)
	}
	return nil
}

// checkLabelValue reports why v is not a valid label value.
func checkLabelValue(k, v string) error {
	if v != "" && (len(v) > 63 || !labelName.MatchString(v)) {
		return fmt.Errorf("value of %q: must be empty or 1-63 characters [A-Za-z0-9-_.], starting and ending alphanumeric", k)
	}
	return nil
}

// decodeLabels reads the labels mapping, reporting every bad key and value
// at once under "labels".
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
		if err := checkLabelKey(k); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if err := checkLabelValue(k, v); err != nil {
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
