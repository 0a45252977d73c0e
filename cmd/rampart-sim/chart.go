package main

import (
	"fmt"
	"image/color"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/rampart-go/rampart/sim"
)

var (
	colorOpen     = color.RGBA{R: 0xf4, G: 0xb6, B: 0xb6, A: 0xff}
	colorHalfOpen = color.RGBA{R: 0xfa, G: 0xdc, B: 0x9c, A: 0xff}
	colorOK       = color.RGBA{R: 0x1a, G: 0x9a, B: 0x3a, A: 0xff}
	colorFailed   = color.RGBA{R: 0xd0, G: 0x30, B: 0x20, A: 0xff}
	colorRefused  = color.RGBA{R: 0x80, G: 0x80, B: 0x80, A: 0xff}
)

// writeChart writes a PNG with one panel per candidate, one above the
// other on a shared time axis: what callers got per second (ok, failed,
// refused), over the breaker's state (open, half-open) shaded behind.
func writeChart(w io.Writer, results []sim.Result, trace string) error {
	const width, panelHeight = 10 * vg.Inch, 2.3 * vg.Inch
	span := 0.0
	peak := 1.0
	for _, r := range results {
		span = max(span, r.Span.Seconds())
		w := r.Resolution.Seconds()
		for _, p := range r.Series {
			peak = max(peak, float64(p.Succeeded)/w, float64(p.Failed)/w, float64(p.Refused)/w)
		}
	}
	yMax := 1.9 * peak // room for the legend

	plots := make([]*plot.Plot, len(results))
	for i, r := range results {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s: %d of %d calls ok, %d failed, %d refused (%d would have succeeded), open %.0fs",
			r.Name, r.Succeeded, r.Calls, r.Failed, r.Refused, r.LostGoodput, r.TimeOpen.Seconds())
		if i == 0 {
			p.Title.Text = "replay of " + trace + "\n" + p.Title.Text
		}
		p.Y.Label.Text = "calls/s"
		p.X.Min, p.X.Max = 0, span
		p.Y.Min, p.Y.Max = 0, yMax
		w := r.Resolution.Seconds()
		// A point mostly Open is shaded open, one with any other time out
		// of Closed half-open; runs of one shade are one polygon, so no
		// seams show between points.
		shadeOf := func(pt sim.Point) color.Color {
			switch {
			case pt.Open*2 >= r.Resolution:
				return colorOpen
			case pt.Open+pt.HalfOpen > 0:
				return colorHalfOpen
			}
			return nil
		}
		for j := 0; j < len(r.Series); {
			c := shadeOf(r.Series[j])
			k := j + 1
			for k < len(r.Series) && shadeOf(r.Series[k]) == c {
				k++
			}
			if c != nil {
				if err := shade(p, float64(j)*w, float64(k)*w, peak*1.1, c); err != nil {
					return err
				}
			}
			j = k
		}
		for _, l := range []struct {
			name  string
			value func(sim.Point) int
			color color.Color
		}{
			{"ok", func(p sim.Point) int { return p.Succeeded }, colorOK},
			{"failed", func(p sim.Point) int { return p.Failed }, colorFailed},
			{"refused by the breaker", func(p sim.Point) int { return p.Refused }, colorRefused},
		} {
			xys := make(plotter.XYs, 0, len(r.Series)+1)
			for j, pt := range r.Series {
				xys = append(xys, plotter.XY{X: float64(j) * w, Y: float64(l.value(pt)) / w})
			}
			if n := len(xys); n > 0 {
				xys = append(xys, plotter.XY{X: float64(n) * w, Y: xys[n-1].Y})
			}
			line, err := plotter.NewLine(xys)
			if err != nil {
				return err
			}
			line.StepStyle = plotter.PostStep
			line.Color = l.color
			line.Width = vg.Points(1.2)
			p.Add(line)
			if i == 0 {
				p.Legend.Add(l.name, line)
			}
		}
		for _, s := range []struct {
			name  string
			color color.Color
		}{{"breaker open", colorOpen}, {"breaker half-open", colorHalfOpen}} {
			sw, err := swatch(s.color)
			if err != nil {
				return err
			}
			if i == 0 {
				p.Legend.Add(s.name, sw)
			}
		}
		p.Legend.Top = true
		p.Legend.XOffs = -vg.Points(6)
		if i == len(results)-1 {
			p.X.Label.Text = "seconds since the trace's first call"
		}
		plots[i] = p
	}

	img := vgimg.NewWith(vgimg.UseWH(width, panelHeight*vg.Length(len(plots))+vg.Inch/3), vgimg.UseDPI(96))
	dc := draw.Crop(draw.New(img), vg.Points(4), -vg.Points(8), vg.Points(4), -vg.Points(6))
	// Stack the panels, then give them the same left edge for their data,
	// so that the time axes line up.
	canvases := make([]draw.Canvas, len(plots))
	h := (dc.Max.Y - dc.Min.Y) / vg.Length(len(plots))
	var left vg.Length
	for i, p := range plots {
		top := dc.Max.Y - vg.Length(i)*h
		canvases[i] = draw.Crop(dc, 0, 0, top-h-dc.Min.Y, top-dc.Max.Y)
		left = max(left, p.DataCanvas(canvases[i]).Min.X-canvases[i].Min.X)
	}
	for i, p := range plots {
		c := canvases[i]
		p.Draw(draw.Crop(c, left-(p.DataCanvas(c).Min.X-c.Min.X), 0, 0, 0))
	}
	_, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(w)
	return err
}

// shade fills x0..x1 by 0..y1 with c.
func shade(p *plot.Plot, x0, x1, y1 float64, c color.Color) error {
	poly, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: 0}, {X: x1, Y: 0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
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
