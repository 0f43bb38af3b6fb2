package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteFiguresKeepsTheOtherCommandsRows: a -test-only run replaces
// make test's rows and keeps make dev's, each row with its own date and
// commit, and the text around the markers stays.
func TestWriteFiguresKeepsTheOtherCommandsRows(t *testing.T) {
	readme := filepath.Join(t.TempDir(), "README.md")
	before := "intro\n" + beginMarker + "\n" + table([]string{
		"| `make dev` on a fresh clone | 11 min 52 s | 2026-11-29, aaaaaaa, 2 cores |",
		"| `make test` on a fresh clone | 57 min 55 s | 2026-11-27, bbbbbbb, 2 cores |",
	}, options{}) + endMarker + "\noutro\n"
	if err := os.WriteFile(readme, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	o := options{testOnly: true, details: "docs/first-run.md"}
	rows, _ := render([]measurement{{what: "`make test` on a fresh clone", seconds: 1800}}, "ccccccc", o)
	if err := writeFigures(readme, rows, o); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	got := string(data)
	for _, want := range []string{"intro\n", "outro\n", "| `make dev` on a fresh clone | 11 min 52 s | 2026-11-29, aaaaaaa", "| `make test` on a fresh clone | 30 min 00 s |", "ccccccc", "docs/first-run.md"} {
		if !strings.Contains(got, want) {
			t.Errorf("README lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "57 min 55 s") || strings.Index(got, "`make dev`") > strings.Index(got, "`make test`") {
		t.Errorf("the old make test row stayed, or the rows are out of order:\n%s", got)
	}
}
