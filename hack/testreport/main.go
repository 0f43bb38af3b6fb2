// Command testreport prints where make test's time went: each step's
// seconds and result (DIR/steps, a line "step seconds result" each, in
// order) with how busy the CPU was meanwhile (DIR/cpu: "step start|end"
// and the /proc/stat line then), what make test built up front
// (DIR/build-*.log), then, from the go test JSON records in DIR (gotestsum
// --jsonfile), the slowest packages and the slowest top-level tests. .ci/run
// runs make test, so CI prints the same table.
//
//	go run ./hack/testreport DIR
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// event is the part of a test2json event the report reads.
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
}

type timing struct {
	name    string
	seconds float64
	result  string
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: testreport DIR")
		os.Exit(2)
	}
	if err := report(os.Stdout, os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(1)
	}
}

func report(w io.Writer, dir string) error {
	steps, err := readSteps(filepath.Join(dir, "steps"))
	if err != nil {
		return err
	}
	busy := readCPU(filepath.Join(dir, "cpu"))
	var total float64
	fmt.Fprintln(w, "make test, step by step (CPU: the share of all cores in use meanwhile, by anything):")
	for _, s := range steps {
		fmt.Fprintf(w, "  %-36s %6.0f s  %-6s %s\n", s.name, s.seconds, s.result, busy[s.name])
		total += s.seconds
	}
	fmt.Fprintf(w, "  %-36s %6.0f s         %s\n", "total", total, busy[""])
	if err := printBuilds(w, dir); err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return err
	}
	var packages, tests []timing
	for _, f := range files {
		p, t, err := readRecord(f)
		if err != nil {
			return err
		}
		packages, tests = append(packages, p...), append(tests, t...)
	}
	printSlowest(w, "slowest packages:", packages, 8)
	printSlowest(w, "slowest tests:", tests, 10)
	return nil
}

func readSteps(path string) ([]timing, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []timing
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var t timing
		if _, err := fmt.Sscan(sc.Text(), &t.name, &t.seconds, &t.result); err != nil {
			return nil, fmt.Errorf("%s: %q: %w", path, sc.Text(), err)
		}
		out = append(out, t)
	}
	return out, sc.Err()
}

// readRecord reads a go test JSON record: each package's elapsed time and
// each top-level test's (subtests are inside their parent's).
func readRecord(path string) (packages, tests []timing, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	for {
		var e event
		if err := dec.Decode(&e); err == io.EOF {
			break
		} else if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		if e.Action != "pass" && e.Action != "fail" {
			continue
		}
		short := strings.TrimPrefix(e.Package, "github.com/lifeline-k8s/lifeline/")
		switch {
		case e.Test == "":
			packages = append(packages, timing{short, e.Elapsed, e.Action})
		case !strings.Contains(e.Test, "/"):
			tests = append(tests, timing{short + " " + e.Test, e.Elapsed, e.Action})
		}
	}
	return packages, tests, nil
}

func printSlowest(w io.Writer, title string, ts []timing, n int) {
	if len(ts) == 0 {
		return
	}
	sort.SliceStable(ts, func(i, j int) bool { return ts[i].seconds > ts[j].seconds })
	fmt.Fprintln(w, title)
	for _, t := range ts[:min(n, len(ts))] {
		fmt.Fprintf(w, "  %-72s %6.0f s  %s\n", t.name, t.seconds, t.result)
	}
}

// readCPU reads each step's share of busy CPU from the /proc/stat lines
// recorded at its start and end ("" keys the whole run). Missing or
// unreadable lines (no /proc) leave a step without a figure.
func readCPU(path string) map[string]string {
	out := map[string]string{}
	data, err := os.ReadFile(path)
	if err != nil {
		return out
	}
	start := map[string][2]uint64{}
	var first, last [2]uint64
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 7 || f[2] != "cpu" {
			continue
		}
		busy, all := jiffies(f[3:])
		if first == ([2]uint64{}) {
			first = [2]uint64{busy, all}
		}
		last = [2]uint64{busy, all}
		switch f[1] {
		case "start":
			start[f[0]] = [2]uint64{busy, all}
		case "end":
			if s, ok := start[f[0]]; ok {
				out[f[0]] = share(busy-s[0], all-s[1])
			}
		}
	}
	out[""] = share(last[0]-first[0], last[1]-first[1])
	return out
}

// jiffies sums a /proc/stat cpu line's fields: all of them, and all but
// idle and iowait.
func jiffies(fields []string) (busy, all uint64) {
	for i, f := range fields {
		var n uint64
		if _, err := fmt.Sscan(f, &n); err != nil {
			continue
		}
		all += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, all
}

func share(busy, all uint64) string {
	if all == 0 {
		return ""
	}
	return fmt.Sprintf("CPU %3.0f%%", 100*float64(busy)/float64(all))
}

// printBuilds lists what make test built before and beside the tests, from
// hack/cluster's "built NAMES in D" lines in DIR/build-*.log.
func printBuilds(w io.Writer, dir string) error {
	logs, err := filepath.Glob(filepath.Join(dir, "build-*.log"))
	if err != nil {
		return err
	}
	var lines []string
	for _, l := range logs {
		data, err := os.ReadFile(l)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(line, "built ") || strings.HasPrefix(line, "devctl:") {
				lines = append(lines, line)
			}
		}
	}
	if len(lines) > 0 {
		fmt.Fprintln(w, "built up front (beside the first steps and the tests):")
		for _, line := range lines {
			fmt.Fprintln(w, "  "+line)
		}
	}
	return nil
}
