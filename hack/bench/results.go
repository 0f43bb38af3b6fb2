package main

import (
	"encoding/json"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/lifeline-k8s/lifeline/hack/binaries"
)

// outDir is out, a relative one under the repository.
func outDir(out string) (string, error) {
	if filepath.IsAbs(out) {
		return out, nil
	}
	root, err := binaries.RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, out), nil
}

// write saves the report as <out>/<date>.json and its charts as
// <out>/<date>/*.svg, a relative out being under the repository; ""
// saves nothing.
func (b *bench) write(out string) error {
	if out == "" {
		return nil
	}
	dir, err := outDir(out)
	if err != nil {
		return err
	}
	charts := filepath.Join(dir, b.report.Date)
	if err := os.MkdirAll(charts, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(&b.report, "", "  ")
	if err != nil {
		return err
	}
	name := b.report.Date
	if b.report.Run > 0 {
		name = fmt.Sprintf("%s-run%d", name, b.report.Run)
	}
	path := filepath.Join(dir, name+".json")
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Println("\nreport:", path)
	for _, g := range groups {
		for _, step := range []string{stepUp, stepUpdate, stepDown} {
			if err := rolloutChart(&b.report, g.name, g.anchor, g.about, step, charts); err != nil {
				return err
			}
		}
	}
	if err := evictionChart(&b.report, charts); err != nil {
		return err
	}
	if err := memoryChart(&b.report, charts); err != nil {
		return err
	}
	fmt.Println("charts:", charts)
	return nil
}

// Colours by implementation, so a chart reads at a glance.
var colours = map[string]color.Color{
	"Kubernetes": color.RGBA{R: 0x32, G: 0x6c, B: 0xe5, A: 0xff},
	"Lifeline":   color.RGBA{R: 0x2e, G: 0x9d, B: 0x5b, A: 0xff},
	"OpenKruise": color.RGBA{R: 0xe8, G: 0x8a, B: 0x1a, A: 0xff},
}

// bar is one bar of a chart: its value, what it is, and its label.
type bar struct {
	name, implementation, label string
	value                       float64
}

// rolloutChart draws one step under one profile: wall time per suite,
// labelled with its ratio to the Deployment's.
func rolloutChart(r *report, group, anchorSuite, about, step, dir string) error {
	anchor := r.find(anchorSuite, step)
	var bars []bar
	detail := ""
	for _, x := range r.Rollouts {
		if x.Group != group || x.Step != step {
			continue
		}
		detail = x.StepDetail
		label := fmt.Sprintf("%.1fs", x.WallSeconds)
		if anchor != nil {
			label += fmt.Sprintf(" %.2f×", x.WallSeconds/anchor.WallSeconds)
		}
		bars = append(bars, bar{name: x.Label, implementation: x.Implementation, label: label, value: x.WallSeconds})
	}
	if len(bars) == 0 {
		return nil
	}
	title := fmt.Sprintf("%s %s, %s (%s)", step, detail, about, r.Date)
	name := fmt.Sprintf("%s-%s.svg", group, strings.ReplaceAll(step, " ", "-"))
	return barChart(filepath.Join(dir, name), title, "wall time, s (ratio to the Deployment)", bars)
}

// evictionChart draws the evictions' client latency, p50 and p99, per run.
func evictionChart(r *report, dir string) error {
	if len(r.Evictions) == 0 {
		return nil
	}
	var bars []bar
	anchor := findEvictions(r, "Lifeline", "PodDisruptionBudget")
	for _, q := range []string{"p50", "p99"} {
		for _, f := range r.Evictions {
			v := f.ClientP50Ms
			a := 0.0
			if anchor != nil {
				a = anchor.ClientP50Ms
			}
			if q == "p99" {
				v = f.ClientP99Ms
				if anchor != nil {
					a = anchor.ClientP99Ms
				}
			}
			label := fmt.Sprintf("%.0fms", v)
			if a > 0 {
				label += fmt.Sprintf(" %.2f×", v/a)
			}
			impl := f.Implementation
			if f.Run != "PodUnavailableBudget" {
				impl = "Kubernetes"
			}
			bars = append(bars, bar{name: fmt.Sprintf("%s: %s, %s", q, f.Implementation, f.Run), implementation: impl, label: label, value: v})
		}
	}
	title := fmt.Sprintf("%d evictions, %d in flight, from %d pods (%s)", r.Evictions[0].Evictions, r.Parameters["in_flight"], r.Evictions[0].Covered, r.Date)
	return barChart(filepath.Join(dir, "evictions.svg"), title, "client latency, ms (ratio to the PodDisruptionBudget)", bars)
}

// memoryChart draws the manager's peak RSS by pods cached.
func memoryChart(r *report, dir string) error {
	if len(r.Memory) == 0 {
		return nil
	}
	var bars []bar
	for _, m := range r.Memory {
		bars = append(bars, bar{name: fmt.Sprintf("%d pods", m.Pods), implementation: "Lifeline", label: fmt.Sprintf("%.0f MiB", m.RSS), value: m.RSS})
	}
	return barChart(filepath.Join(dir, "memory.svg"), fmt.Sprintf("lifeline-manager peak RSS by pods cached (%s)", r.Date), "MiB", bars)
}

// barChart draws bars, one colour per implementation, each labelled above.
func barChart(path, title, yLabel string, bars []bar) error {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = yLabel
	p.Y.Min = 0
	top := 0.0
	var names []string
	for i, b := range bars {
		chart, err := plotter.NewBarChart(plotter.Values{b.value}, vg.Points(22))
		if err != nil {
			return err
		}
		chart.XMin = float64(i)
		chart.Color = colours[b.implementation]
		chart.LineStyle.Width = 0
		p.Add(chart)
		names = append(names, b.name)
		top = math.Max(top, b.value)
	}
	var xys plotter.XYs
	var labels []string
	for i, b := range bars {
		xys = append(xys, plotter.XY{X: float64(i), Y: b.value + top*0.02})
		labels = append(labels, b.label)
	}
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
	if err != nil {
		return err
	}
	for i := range l.TextStyle {
		l.TextStyle[i].XAlign = draw.XCenter
		l.TextStyle[i].Font.Size = vg.Points(7)
	}
	p.Add(l)
	p.Y.Max = top * 1.12
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = math.Pi / 6
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YCenter
	p.X.Tick.Label.Font.Size = vg.Points(7)
	width := vg.Length(math.Max(6, 0.9*float64(len(bars))+2)) * vg.Inch
	return p.Save(width, 4.5*vg.Inch, path)
}
