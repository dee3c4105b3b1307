package bench

import (
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Chart draws propagation p50 and p99 by fleet size, one colour per kind,
// on log-log axes, to a PNG file.
func (r *Report) Chart(path string) error {
	ns := slices.Clone(r.Settings.Fleets)
	slices.Sort(ns)
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Propagation, commit → follower (%d × %s, %d changed; median of %d run(s))",
		r.Settings.Items, size(r.Settings.ItemSize), r.Settings.Changed, len(r.Runs))
	p.X.Label.Text = "followers (N), one session each"
	p.Y.Label.Text = "milliseconds"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker = fleetTicks(ns)
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())

	colours := map[string]color.Color{
		kindProject: color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
		kindFloor:   color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
		kindNaive:   color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, kl := range kindLabels() {
		for _, q := range []struct {
			name   string
			get    func(FleetSummary) float64
			dashed bool
		}{
			{"p50", func(f FleetSummary) float64 { return f.Propagation.P50 }, false},
			{"p99", func(f FleetSummary) float64 { return f.Propagation.P99 }, true},
		} {
			var pts plotter.XYs
			for _, n := range ns {
				f := r.Fleet(n, kl.kind)
				if v := q.get(f); f.Runs > 0 && v > 0 {
					pts = append(pts, plotter.XY{X: float64(n), Y: v})
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
			}
			if len(pts) == 0 {
				continue
			}
			l, s, err := plotter.NewLinePoints(pts)
			if err != nil {
				return err
			}
			l.Color, s.Color = colours[kl.kind], colours[kl.kind]
			l.Width = vg.Points(1.5)
			s.Shape = draw.CircleGlyph{}
			if q.dashed {
				l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
				s.Shape = draw.TriangleGlyph{}
			}
			p.Add(l, s)
			p.Legend.Add(kl.label+" "+q.name, l, s)
		}
	}
	if math.IsInf(lo, 0) {
		lo, hi = 0.1, 1
	}
	p.X.Min, p.X.Max = float64(ns[0])/2, float64(ns[len(ns)-1])*2
	p.Y.Min, p.Y.Max = lo/1.5, hi*3 // room for the legend
	return p.Save(9*vg.Inch, 5.5*vg.Inch, path)
}

// fleetTicks marks exactly the measured fleet sizes.
type fleetTicks []int

// Ticks implements plot.Ticker.
func (t fleetTicks) Ticks(min, max float64) []plot.Tick {
	var out []plot.Tick
	for _, n := range t {
		if v := float64(n); v >= min && v <= max {
			out = append(out, plot.Tick{Value: v, Label: fmt.Sprint(n)})
		}
	}
	return out
}
