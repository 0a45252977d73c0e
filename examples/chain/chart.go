package main

import (
	"fmt"
	"image/color"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// writeChart writes the runs' windows as a PNG, one pair of panels per
// run: the requests arriving at each tier per second, and the callers'
// requests answered in time per second by criticality. The brownout's
// windows are shaded.
func writeChart(cfg config, runs []summary, path string) error {
	var rows [][]*plot.Plot
	for _, s := range runs {
		load, err := panel(fmt.Sprintf("%s: requests arriving per second at each tier", s.Run), "requests/s", cfg, s, []series{
			{"at A", func(w window) float64 { return float64(w.AtA) }, color.RGBA{R: 0x1f, G: 0x5f, B: 0xbf, A: 0xff}},
			{"at B", func(w window) float64 { return float64(w.AtB) }, color.RGBA{R: 0x8a, G: 0x3f, B: 0xbf, A: 0xff}},
			{"at C", func(w window) float64 { return float64(w.AtC) }, color.RGBA{R: 0xd0, G: 0x30, B: 0x20, A: 0xff}},
		})
		if err != nil {
			return err
		}
		ok, err := panel(fmt.Sprintf("%s: caller requests answered in time per second, by criticality", s.Run), "requests/s", cfg, s, []series{
			{"critical", func(w window) float64 { return float64(w.OK[2]) }, color.RGBA{R: 0x1a, G: 0x9a, B: 0x3a, A: 0xff}},
			{"default", func(w window) float64 { return float64(w.OK[1]) }, color.RGBA{R: 0x1f, G: 0x5f, B: 0xbf, A: 0xff}},
			{"sheddable", func(w window) float64 { return float64(w.OK[0]) }, color.RGBA{R: 0xe0, G: 0x90, B: 0x10, A: 0xff}},
		})
		if err != nil {
			return err
		}
		rows = append(rows, []*plot.Plot{load}, []*plot.Plot{ok})
	}
	img := vgimg.NewWith(vgimg.UseWH(10*vg.Inch, 3*vg.Inch*vg.Length(len(rows))), vgimg.UseDPI(96))
	dc := draw.New(img)
	canvases := plot.Align(rows, draw.Tiles{Rows: len(rows), Cols: 1, PadY: vg.Points(8), PadTop: vg.Points(4), PadBottom: vg.Points(4)}, dc)
	for i, row := range rows {
		row[0].Draw(canvases[i][0])
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

type series struct {
	name  string
	value func(window) float64
	color color.Color
}

func panel(title, ylabel string, cfg config, s summary, ss []series) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "s"
	p.Y.Label.Text = ylabel
	p.Legend.Top = true
	peak := 1.0
	for _, se := range ss {
		for _, w := range s.Windows {
			peak = max(peak, se.value(w))
		}
	}
	from, to := cfg.healthy.Seconds(), (cfg.healthy + cfg.fault).Seconds()
	shade, err := plotter.NewPolygon(plotter.XYs{{X: from, Y: 0}, {X: to, Y: 0}, {X: to, Y: 1.2 * peak}, {X: from, Y: 1.2 * peak}})
	if err != nil {
		return nil, err
	}
	shade.Color = color.RGBA{R: 0xe4, G: 0xe4, B: 0xe4, A: 0xff}
	shade.LineStyle.Width = 0
	p.Add(shade)
	for _, se := range ss {
		pts := make(plotter.XYs, len(s.Windows))
		for i, w := range s.Windows {
			pts[i] = plotter.XY{X: float64(i) + 0.5, Y: se.value(w)}
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		line.Color = se.color
		line.Width = vg.Points(1.5)
		p.Add(line)
		p.Legend.Add(se.name, line)
	}
	p.Y.Min, p.Y.Max = 0, 1.2*peak
	return p, nil
}
