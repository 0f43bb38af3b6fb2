// Command testreport prints where make test's time went: each step's
// seconds and result (DIR/steps, a line "step seconds result" each, in
// order), then, from the go test JSON records in DIR (gotestsum
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
	var total float64
	fmt.Fprintln(w, "make test, step by step:")
	for _, s := range steps {
		fmt.Fprintf(w, "  %-36s %6.0f s  %s\n", s.name, s.seconds, s.result)
		total += s.seconds
	}
	fmt.Fprintf(w, "  %-36s %6.0f s\n", "total", total)
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
