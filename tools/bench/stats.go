package bench

import (
	"math"
	"slices"
	"time"
)

// Dist summarises a set of latency samples, in milliseconds.
type Dist struct {
	N    int     `json:"n"`
	P50  float64 `json:"p50_ms"`
	P99  float64 `json:"p99_ms"`
	Max  float64 `json:"max_ms"`
	Mean float64 `json:"mean_ms"`
}

// summarize computes the nearest-rank percentiles of samples (nanoseconds).
func summarize(samples []int64) Dist {
	if len(samples) == 0 {
		return Dist{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	var sum float64
	for _, v := range s {
		sum += float64(v)
	}
	return Dist{
		N:    len(s),
		P50:  ms(rank(s, 0.50)),
		P99:  ms(rank(s, 0.99)),
		Max:  ms(s[len(s)-1]),
		Mean: sum / float64(len(s)) / float64(time.Millisecond),
	}
}

// rank is the nearest-rank percentile of sorted s.
func rank(s []int64, p float64) int64 {
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

func ms(ns int64) float64 { return float64(ns) / float64(time.Millisecond) }

// median returns the median of vs (the mean of the middle two for an even
// count), ignoring NaNs; NaN when there is nothing.
func median(vs []float64) float64 {
	s := slices.DeleteFunc(slices.Clone(vs), math.IsNaN)
	if len(s) == 0 {
		return math.NaN()
	}
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// spread returns the smallest and largest of vs, ignoring NaNs.
func spread(vs []float64) (lo, hi float64) {
	lo, hi = math.NaN(), math.NaN()
	for _, v := range vs {
		if math.IsNaN(v) {
			continue
		}
		if math.IsNaN(lo) || v < lo {
			lo = v
		}
		if math.IsNaN(hi) || v > hi {
			hi = v
		}
	}
	return lo, hi
}

// medianDist is the per-field median of several runs' distributions.
func medianDist(ds []Dist) Dist {
	pick := func(f func(Dist) float64) float64 {
		vs := make([]float64, len(ds))
		for i, d := range ds {
			vs[i] = f(d)
		}
		return median(vs)
	}
	if len(ds) == 0 {
		return Dist{}
	}
	return Dist{
		N:    ds[0].N,
		P50:  pick(func(d Dist) float64 { return d.P50 }),
		P99:  pick(func(d Dist) float64 { return d.P99 }),
		Max:  pick(func(d Dist) float64 { return d.Max }),
		Mean: pick(func(d Dist) float64 { return d.Mean }),
	}
}

// ratio is a/b, NaN when b is not positive.
func ratio(a, b float64) float64 {
	if b <= 0 || math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return a / b
}
