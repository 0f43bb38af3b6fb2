package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
)

// repeatRuns runs the picked scenarios o.repeat times, each on a cluster of
// its own, and after several prints each target over the runs: a ratio by
// its median (a bind's p50 of a few milliseconds moved from 0.94× to 1.49×
// the Deployment's between runs of one day), any other by how many runs
// met it.
func repeatRuns(ctx context.Context, o options, picked []scenario) error {
	if o.repeat <= 1 {
		_, err := run(ctx, o, picked, 0)
		return err
	}
	var reports []*report
	for i := 1; i <= o.repeat; i++ {
		fmt.Printf("\n==== run %d of %d\n", i, o.repeat)
		r, err := run(ctx, o, picked, i)
		if err != nil {
			return fmt.Errorf("run %d: %w", i, err)
		}
		reports = append(reports, r)
	}
	printOverRuns(reports)
	return writeOverRuns(o.out, reports)
}

// overRuns is one target over several runs.
type overRuns struct {
	name    string
	ratios  []float64
	met     int
	limit   float64
	atMost  bool
	figures []string
	// figure and verdict decide it: the median ratio, or how many runs met it.
	figure, verdict string
}

func summarize(reports []*report) []*overRuns {
	var out []*overRuns
	byName := map[string]*overRuns{}
	for _, r := range reports {
		for _, t := range r.Targets {
			if t.NotMeasured {
				continue
			}
			o := byName[t.Name]
			if o == nil {
				o = &overRuns{name: t.Name, limit: t.Limit, atMost: t.AtMost}
				byName[t.Name] = o
				out = append(out, o)
			}
			if t.Ratio > 0 {
				o.ratios = append(o.ratios, t.Ratio)
			}
			if t.Met {
				o.met++
			}
			o.figures = append(o.figures, strings.SplitN(t.Figure, " ", 2)[0])
		}
	}
	for _, o := range out {
		o.figure, o.verdict = fmt.Sprintf("met in %d of %d", o.met, len(o.figures)), "NOT MET"
		if o.met == len(o.figures) {
			o.verdict = "met"
		}
		if len(o.ratios) == len(o.figures) {
			m := median(o.ratios)
			o.figure, o.verdict = fmt.Sprintf("median %.2f×", m), "NOT MET"
			if meetsRatio(m, o.limit, o.atMost) {
				o.verdict = "met"
			}
		}
	}
	return out
}

func printOverRuns(reports []*report) {
	fmt.Printf("\nTargets over %d runs (a ratio by its median; the runs' figures in order):\n", len(reports))
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	for _, o := range summarize(reports) {
		fmt.Fprintf(tw, "  %s\t%s\t(%s)\t%s\n", o.name, o.figure, strings.Join(o.figures, ", "), o.verdict)
	}
	tw.Flush()
}

// writeOverRuns saves the targets over the runs beside the runs' reports,
// as <out>/<date>-over-runs.json.
func writeOverRuns(out string, reports []*report) error {
	if out == "" {
		return nil
	}
	type row struct {
		Name    string   `json:"name"`
		Figure  string   `json:"figure"`
		Runs    []string `json:"runs"`
		Verdict string   `json:"verdict"`
	}
	var rows []row
	for _, o := range summarize(reports) {
		rows = append(rows, row{Name: o.name, Figure: o.figure, Runs: o.figures, Verdict: o.verdict})
	}
	dir, err := outDir(out)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(map[string]any{"date": reports[0].Date, "runs": len(reports), "targets": rows}, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(dir, reports[0].Date+"-over-runs.json")
	fmt.Println("targets over the runs:", path)
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
