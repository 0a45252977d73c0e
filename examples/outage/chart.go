package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"slices"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/rampart-go/rampart/circuitbreaker"
)

var (
	colorFault    = color.RGBA{R: 0xe4, G: 0xe4, B: 0xe4, A: 0xff}
	colorOpen     = color.RGBA{R: 0xf4, G: 0xb6, B: 0xb6, A: 0xff}
	colorHalfOpen = color.RGBA{R: 0xfa, G: 0xdc, B: 0x9c, A: 0xff}
	colorArrivals = color.RGBA{R: 0x1f, G: 0x5f, B: 0xbf, A: 0xff}
	colorGoodput  = color.RGBA{R: 0x1a, G: 0x9a, B: 0x3a, A: 0xff}
	colorWasted   = color.RGBA{R: 0xd0, G: 0x30, B: 0x20, A: 0xff}
	colorCallers  = color.RGBA{A: 0xff}
)

// writeChart writes the run's timelines as a PNG: for each client, one
// above the other on a shared time axis, the backend's load and work per
// second, then the callers' success rate per second, with the fault and,
// for rampart, the breaker's open and half-open times shaded.
func writeChart(r *result, path string) error {
	const width, height = 10 * vg.Inch, 9.5 * vg.Inch
	o := r.o
	m := o.model()
	run := o.total().Seconds()

	peak := 0.0
	for _, s := range []summary{r.Naive, r.Rampart} {
		for _, v := range [][]int64{s.Timeline.CallerRequests, s.Timeline.BackendArrivals, s.Timeline.Goodput, s.Timeline.Wasted} {
			peak = max(peak, slicePeak(floats(v)))
		}
	}
	yMax := 1.45 * peak // room for the legend

	type panel struct {
		p      *plot.Plot
		weight float64 // share of the height
	}
	var panels []panel
	for i, s := range []summary{r.Naive, r.Rampart} {
		title := fmt.Sprintf("naive client: every failure retried %d times at once; outage %s", o.naiveRetries, outageText(s))
		if i == 1 {
			title = fmt.Sprintf("rampart client: circuit breaker (cool-down %v), retry budget, %v attempt timeout; outage %s",
				o.coolDown, o.attemptTimeout, outageText(s))
		}
		load := plot.New()
		load.Title.Text = title
		load.Y.Label.Text = "requests/s"
		load.X.Min, load.X.Max = 0, run
		load.Y.Min, load.Y.Max = 0, yMax
		if err := shade(load, m.faultStart, m.faultEnd, 0, yMax, colorFault); err != nil {
			return err
		}
		for _, l := range []struct {
			name   string
			values []int64
			color  color.Color
			dashed bool
		}{
			{"caller requests", s.Timeline.CallerRequests, colorCallers, true},
			{"backend arrivals (its offered load)", s.Timeline.BackendArrivals, colorArrivals, false},
			{"backend goodput", s.Timeline.Goodput, colorGoodput, false},
			{"backend work wasted (caller gone)", s.Timeline.Wasted, colorWasted, false},
		} {
			line, err := stepLine(0, floats(l.values), l.color, l.dashed)
			if err != nil {
				return err
			}
			load.Add(line)
			load.Legend.Add(l.name, line)
		}
		legendFault, err := swatch(colorFault)
		if err != nil {
			return err
		}
		load.Legend.Add("fault: downstream stalled", legendFault)
		load.Legend.Top, load.Legend.Left = true, true
		load.Legend.XOffs = vg.Points(6)

		success := plot.New()
		success.Y.Label.Text = "success %"
		success.X.Min, success.X.Max = 0, run
		success.Y.Min, success.Y.Max = 0, 112
		if err := shade(success, m.faultStart, m.faultEnd, 0, 100, colorFault); err != nil {
			return err
		}
		// The outage, as a bar above the success rate.
		outageEnd := m.faultStart.Seconds() + s.OutageMs/1000
		bar, err := plotter.NewLine(plotter.XYs{{X: m.faultStart.Seconds(), Y: 106}, {X: outageEnd, Y: 106}})
		if err != nil {
			return err
		}
		bar.Color = colorWasted
		bar.Width = vg.Points(4)
		success.Add(bar)
		success.Legend.Add(fmt.Sprintf("outage: some 1 s window below %.0f%% success", 100*outageRate), bar)
		success.Legend.Top, success.Legend.Left = false, true
		success.Legend.XOffs, success.Legend.YOffs = vg.Points(6), vg.Points(6)
		if i == 1 {
			open, err := swatch(colorOpen)
			if err != nil {
				return err
			}
			half, err := swatch(colorHalfOpen)
			if err != nil {
				return err
			}
			for _, sp := range s.breaker {
				c := colorOpen
				switch sp.state {
				case circuitbreaker.Closed:
					continue
				case circuitbreaker.HalfOpen:
					c = colorHalfOpen
				}
				if err := shade(success, sp.from, sp.to, 0, 100, c); err != nil {
					return err
				}
			}
			success.Legend.Add("breaker open", open)
			success.Legend.Add("breaker half-open (probe)", half)
			success.Legend.Left = false // the right is clear once rampart has recovered
			success.Legend.XOffs = -vg.Points(6)
		}
		target, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 100 * outageRate}, {X: run, Y: 100 * outageRate}})
		if err != nil {
			return err
		}
		target.Color = color.Gray{Y: 0x80}
		target.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
		success.Add(target)
		for _, seg := range segments(ratios(s.Timeline.SuccessRate)) {
			for j := range seg.values {
				seg.values[j] *= 100
			}
			line, err := stepLine(seg.from, seg.values, colorCallers, false)
			if err != nil {
				return err
			}
			success.Add(line)
		}
		if i == 1 {
			success.X.Label.Text = "seconds since start"
		}
		panels = append(panels, panel{load, 0.32}, panel{success, 0.18})
	}

	img := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(96))
	dc := draw.Crop(draw.New(img), vg.Points(4), -vg.Points(8), vg.Points(4), -vg.Points(6))
	// Stack the panels top to bottom, then give them the same left edge
	// for their data, so that the time axes line up.
	canvases := make([]draw.Canvas, len(panels))
	top := dc.Max.Y
	total := dc.Max.Y - dc.Min.Y
	var left vg.Length
	for i, pn := range panels {
		h := vg.Length(pn.weight) * total
		canvases[i] = draw.Crop(dc, 0, 0, top-h-dc.Min.Y, top-dc.Max.Y)
		top -= h
		left = max(left, pn.p.DataCanvas(canvases[i]).Min.X-canvases[i].Min.X)
	}
	for i, pn := range panels {
		c := canvases[i]
		c = draw.Crop(c, left-(pn.p.DataCanvas(c).Min.X-c.Min.X), 0, 0, 0)
		pn.p.Draw(c)
	}

	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// stepLine draws one value per second as a step: values[i] holds from
// from+i to from+i+1 seconds.
func stepLine(from int, values []float64, c color.Color, dashed bool) (*plotter.Line, error) {
	xys := make(plotter.XYs, 0, len(values)+1)
	for i, v := range values {
		xys = append(xys, plotter.XY{X: float64(from + i), Y: v})
	}
	if n := len(values); n > 0 {
		xys = append(xys, plotter.XY{X: float64(from + n), Y: values[n-1]})
	}
	l, err := plotter.NewLine(xys)
	if err != nil {
		return nil, err
	}
	l.StepStyle = plotter.PostStep
	l.Color = c
	l.Width = vg.Points(1.5)
	if dashed {
		l.Width = vg.Points(1)
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	return l, nil
}

// segment is a run of values without NaN, starting at index from.
type segment struct {
	from   int
	values []float64
}

// segments splits v at its NaNs.
func segments(v []float64) []segment {
	var out []segment
	for i := 0; i < len(v); i++ {
		if math.IsNaN(v[i]) {
			continue
		}
		j := i
		for j < len(v) && !math.IsNaN(v[j]) {
			j++
		}
		out = append(out, segment{from: i, values: slices.Clone(v[i:j])})
		i = j
	}
	return out
}

// shade fills the rectangle from..to by y0..y1 with c.
func shade(p *plot.Plot, from, to time.Duration, y0, y1 float64, c color.Color) error {
	x0, x1 := from.Seconds(), to.Seconds()
	poly, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
	if err != nil {
		return err
	}
	poly.Color = c
	poly.LineStyle.Width = 0
	p.Add(poly)
	return nil
}

// swatch is a legend entry for a shaded area.
func swatch(c color.Color) (*plotter.Polygon, error) {
	poly, err := plotter.NewPolygon(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 0}, {X: 1, Y: 1}})
	if err != nil {
		return nil, err
	}
	poly.Color = c
	poly.LineStyle.Width = 0
	return poly, nil
}
