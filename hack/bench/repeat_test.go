package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// Over runs a ratio target is decided on its median, whatever one run
// said; another by whether every run met it.
func TestSummarizeDecidesRatiosOnTheMedian(t *testing.T) {
	run := func(bind float64, bindMet, memMet bool) *report {
		return &report{Targets: []target{
			{Name: "binds", Figure: "x", Ratio: bind, Limit: 1.2, AtMost: true, Met: bindMet},
			{Name: "memory", Figure: "y", Met: memMet},
			{Name: "skipped", NotMeasured: true},
		}}
	}
	got := summarize([]*report{run(1.49, false, true), run(0.94, true, true), run(1.05, true, false)})
	if len(got) != 2 {
		t.Fatalf("%d targets, want 2 (the one not measured left out)", len(got))
	}
	if b := got[0]; b.figure != "median 1.05×" || b.verdict != "met" {
		t.Errorf("binds: %s, %s; want the median 1.05×, met", b.figure, b.verdict)
	}
	if m := got[1]; m.figure != "met in 2 of 3" || m.verdict != "NOT MET" {
		t.Errorf("memory: %s, %s; want met in 2 of 3, NOT MET", m.figure, m.verdict)
	}
	if at := summarize([]*report{run(1.3, false, true), run(1.25, false, true)})[0]; at.verdict != "NOT MET" {
		t.Errorf("binds over two runs of 1.30× and 1.25×: %s, want NOT MET", at.verdict)
	}
}

// The verdicts over the runs are saved, not only printed.
func TestWriteOverRunsSavesTheVerdicts(t *testing.T) {
	dir := t.TempDir()
	r := func(x float64) *report {
		return &report{Date: "2026-11-29", Targets: []target{{Name: "binds", Figure: "x", Ratio: x, Limit: 1.2, AtMost: true}}}
	}
	if err := writeOverRuns(dir, []*report{r(1.3), r(1.1), r(1.0)}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "2026-11-29-over-runs.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Runs    int
		Targets []struct{ Name, Figure, Verdict string }
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.Runs != 3 || len(got.Targets) != 1 || got.Targets[0].Figure != "median 1.10×" || got.Targets[0].Verdict != "met" {
		t.Errorf("saved %s, want 3 runs and binds at median 1.10×, met", raw)
	}
}
