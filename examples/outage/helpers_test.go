package main

import (
	"fmt"
	"image/color"
	"os"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// panelData is one query of the dashboard and what Prometheus returned.
type panelData struct {
	title, expr string
	series      []seriesData
}

var palette = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
}

// renderDashboard draws the dashboard's panels from the data Prometheus
// returned (seconds since start on x; the fault shaded), the queries of
// one panel together, then the alerts' states, in a PNG at path: a
// stand-in for Grafana's rendering, from the same queries.
//
// The picture of the alerts, at alertsPath, is the breaker's state and the
// alerts' panels alone, side by side.
func renderDashboard(path, alertsPath string, queries []panelData, alerts []seriesData, start, end, faultStart, faultEnd time.Time) error {
	var titles []string
	byTitle := map[string][]panelData{}
	for _, q := range queries {
		if _, ok := byTitle[q.title]; !ok {
			titles = append(titles, q.title)
		}
		byTitle[q.title] = append(byTitle[q.title], q)
	}
	run := end.Sub(start).Seconds()
	x := func(t float64) float64 { return t - float64(start.UnixNano())/1e9 }
	newPlot := func(title string) (*plot.Plot, error) {
		p := plot.New()
		p.Title.Text = title
		p.X.Min, p.X.Max = 0, run
		p.X.Label.Text = "seconds"
		p.Legend.Top, p.Legend.Left = true, true
		p.Legend.TextStyle.Font.Size = vg.Points(7)
		p.Add(plotter.NewGrid())
		return p, nil
	}
	var plots []*plot.Plot
	for _, title := range titles {
		p, _ := newPlot(title)
		i := 0
		peak := 0.0
		var lines []*plotter.Line
		for _, q := range byTitle[title] {
			for _, s := range q.series {
				var xys plotter.XYs
				level := 1.0 // a state timeline: each state at its own height
				if q.title == "Breaker state" {
					level = float64(1 + slices.Index(states, s.labels["rampart_breaker_state"]))
				}
				for _, pt := range s.points {
					if pt.v == pt.v { // not NaN
						xys = append(xys, plotter.XY{X: x(pt.t), Y: pt.v * level})
						peak = max(peak, pt.v*level)
					}
				}
				if len(xys) == 0 {
					continue
				}
				var first *plotter.Line
				for _, seg := range splitAtGaps(xys) {
					l, err := plotter.NewLine(seg)
					if err != nil {
						return err
					}
					l.Color = palette[i%len(palette)]
					l.Width = vg.Points(1.2)
					if q.title == "Breaker state" {
						l.Width = vg.Points(5)
						l.Color = stateColors[s.labels["rampart_breaker_state"]]
					}
					lines = append(lines, l)
					if first == nil {
						first = l
					}
				}
				l := first
				if i < 6 {
					p.Legend.Add(legend(s.labels), l)
				}
				i++
			}
		}
		if i == 0 {
			p.Title.Text += " (no data: not in the demo)"
		}
		p.Y.Min, p.Y.Max = 0, max(1, peak*1.6)
		shadeFault(p, x(unix(faultStart)), x(unix(faultEnd)), p.Y.Max) // under the lines
		for _, l := range lines {
			p.Add(l)
		}
		plots = append(plots, p)
	}
	p, _ := newPlot("Alerts, pending (low) and firing (high); for: shortened to 2s")
	names := map[string]float64{}
	for _, s := range alerts {
		name := s.labels["alertname"]
		if _, ok := names[name]; !ok {
			names[name] = float64(len(names) + 1)
		}
	}
	p.Y.Min, p.Y.Max = 0, float64(len(names))+2
	shadeFault(p, x(unix(faultStart)), x(unix(faultEnd)), p.Y.Max)
	for i, s := range alerts {
		lvl := names[s.labels["alertname"]]
		if s.labels["alertstate"] == "firing" {
			lvl += 0.25
		}
		var xys plotter.XYs
		for _, pt := range s.points {
			xys = append(xys, plotter.XY{X: x(pt.t), Y: lvl})
		}
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			return err
		}
		sc.Color = palette[i%len(palette)]
		sc.GlyphStyle.Radius = vg.Points(2)
		p.Add(sc)
		p.Legend.Add(s.labels["alertname"]+" "+s.labels["alertstate"], sc)
	}
	plots = append(plots, p)

	if err := writeGrid(path, plots, 3); err != nil {
		return err
	}
	return writeGrid(alertsPath, []*plot.Plot{plots[0], plots[len(plots)-1]}, 2)
}

// writeGrid draws plots in a grid of cols columns, in a PNG at path.
func writeGrid(path string, plots []*plot.Plot, cols int) error {
	rows := (len(plots) + cols - 1) / cols
	w, h := vg.Length(cols)*5*vg.Inch, vg.Length(rows)*2.6*vg.Inch
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(80))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 3, PadY: vg.Millimeter * 3, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
		for j := range cols {
			if k := i*cols + j; k < len(plots) {
				grid[i][j] = plots[k]
			}
		}
	}
	canvases := plot.Align(grid, tiles, dc)
	for i := range grid {
		for j := range grid[i] {
			if grid[i][j] != nil {
				grid[i][j].Draw(canvases[i][j])
			}
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// states are the heights of a breaker's states in the picture of the
// state timeline, from 1; stateColors their colours.
var (
	states      = []string{"closed", "half-open", "open", "forced-open", "forced-closed"}
	stateColors = map[string]color.Color{
		"closed": color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, "half-open": color.RGBA{R: 0xe0, G: 0xa0, B: 0x00, A: 0xff},
		"open": color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, "forced-open": color.RGBA{R: 0x80, G: 0x10, B: 0x10, A: 0xff},
		"forced-closed": color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff},
	}
)

// splitAtGaps splits xys where a sample (every half second) is missing.
func splitAtGaps(xys plotter.XYs) []plotter.XYs {
	var out []plotter.XYs
	from := 0
	for i := 1; i <= len(xys); i++ {
		if i == len(xys) || xys[i].X-xys[i-1].X > 0.75 {
			seg := xys[from:i]
			if len(seg) == 1 { // a line needs two points
				seg = append(seg, plotter.XY{X: seg[0].X + 0.5, Y: seg[0].Y})
			}
			out = append(out, seg)
			from = i
		}
	}
	return out
}

// legend names a series by its labels other than the scrape's.
func legend(labels map[string]string) string {
	var parts []string
	for k, v := range labels {
		if k == "job" || k == "instance" || k == "__name__" {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s=%s", strings.TrimPrefix(k, "rampart_"), v))
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

// shadeFault shades the fault's span from x0 to x1 up to y.
func shadeFault(p *plot.Plot, x0, x1, y float64) {
	poly, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: 0}, {X: x1, Y: 0}, {X: x1, Y: y}, {X: x0, Y: y}})
	if err != nil {
		return
	}
	poly.Color = colorFault
	poly.LineStyle.Width = 0
	p.Add(poly)
}
