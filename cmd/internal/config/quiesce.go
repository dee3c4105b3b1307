package config

import "time"

// Wait is the agent's quiescence window, as consul-template's wait: after
// a new generation arrives the agent waits until none newer has come for
// Min, but never longer than Max since the first one of the burst, and
// then applies the newest. Zero Min turns it off (the default).
type Wait struct {
	Min, Max time.Duration
}

// DefaultWaitMaxFactor sets wait.max when only wait.min is given: four
// times min, consul-template's default.
const DefaultWaitMaxFactor = 4

// validateQuiesce checks wait and reload_splay, and fills wait.max when
// only wait.min is set.
func (c *Config) validateQuiesce(p *problems) {
	for _, k := range []struct {
		key string
		val time.Duration
	}{{"wait.min", c.Wait.Min}, {"wait.max", c.Wait.Max}, {"reload_splay", c.ReloadSplay}} {
		if !p.has(k.key) && k.val < 0 {
			p.addf(k.key, "must not be negative")
		}
	}
	if p.has("wait.min") || p.has("wait.max") || c.Wait.Min < 0 || c.Wait.Max < 0 {
		return
	}
	switch {
	case c.Wait.Min == 0 && c.Wait.Max > 0:
		p.addf("wait.min", "required when wait.max is set (a quiet period like \"2s\")")
	case c.Wait.Max == 0:
		c.Wait.Max = DefaultWaitMaxFactor * c.Wait.Min
	case c.Wait.Min > c.Wait.Max:
		p.addf("wait.max", "%v is less than wait.min %v", c.Wait.Max, c.Wait.Min)
	}
}
