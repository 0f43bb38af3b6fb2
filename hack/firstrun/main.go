// Command firstrun measures what a newcomer waits for (make first-run):
// make dev until its cluster is ready and make test, each on a fresh clone
// of HEAD, first with empty Go module, build and binary caches (a fresh
// machine's, in a folder of their own, so the user's caches are neither
// used nor touched), then again with the caches that run left. It writes the
// figures, the date, the commit and make test's step tables into README.md
// between the first-run markers, so the README's first-run table is always
// one run's measurement, never a figure from memory.
//
// Debian's packages for the real nodes (containerd, runc, CNI plugins) are
// the one thing it cannot isolate: -remove-runtime removes them first (as
// root), so the first make dev installs them as on a fresh machine.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

const (
	beginMarker = "<!-- first-run: written by make first-run (hack/firstrun) -->"
	endMarker   = "<!-- /first-run -->"
)

type options struct {
	devOnly, testOnly, removeRuntime, keep bool
	readme, details                        string
}

func main() {
	var o options
	flag.BoolVar(&o.devOnly, "dev-only", false, "measure make dev only")
	flag.BoolVar(&o.testOnly, "test-only", false, "measure make test only")
	flag.BoolVar(&o.removeRuntime, "remove-runtime", false, "apt-get remove the real nodes' packages first, so the first make dev installs them as on a fresh machine (root)")
	flag.BoolVar(&o.keep, "keep", false, "keep the clones, caches and logs")
	flag.StringVar(&o.readme, "readme", "README.md", "the README to write the figures into (empty: print them only)")
	flag.StringVar(&o.details, "details", "docs/first-run.md", "the page to write make test's step tables into (empty: print them only)")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "firstrun:", err)
		os.Exit(1)
	}
}

// A measurement is one command's run.
type measurement struct {
	what    string
	seconds float64
	report  string // make test's step table (hack/testreport)
	err     error
}

func run(o options) error {
	commit, err := output("git", "rev-parse", "--short", "HEAD")
	if err != nil {
		return err
	}
	if dirty, _ := output("git", "status", "--porcelain", "--untracked-files=no"); dirty != "" {
		fmt.Fprintln(os.Stderr, "firstrun: the working tree has changes; the clone measures the commit", commit, "without them")
	}
	tmp, err := os.MkdirTemp("", "lifeline-firstrun-")
	if err != nil {
		return err
	}
	if !o.keep {
		defer os.RemoveAll(tmp)
	}
	fmt.Println("firstrun: clones, caches and logs in", tmp)
	if o.removeRuntime {
		if out, err := exec.Command("apt-get", "remove", "-y", "-qq", "containerd", "runc", "containernetworking-plugins").CombinedOutput(); err != nil {
			return fmt.Errorf("removing the runtime's packages: %w\n%s", err, out)
		}
	}
	var ms []measurement
	if !o.testOnly {
		dev := filepath.Join(tmp, "dev")
		ms = append(ms, measureDev(dev, "`make dev` on a fresh clone with empty caches, until `.dev/ready`"))
		ms = append(ms, measureDev(dev, "`make dev` again (caches warm)"))
	}
	if !o.devOnly {
		test := filepath.Join(tmp, "test")
		ms = append(ms, measureTest(test, "`make test` on a fresh clone with empty caches"))
		ms = append(ms, measureTest(test, "`make test` again (caches warm)"))
	}
	rows, details := render(ms, commit, o)
	fmt.Print(table(rows, o), details)
	if o.readme != "" {
		if err := writeFigures(o.readme, rows, o); err != nil {
			return err
		}
	}
	if o.details != "" && details != "" {
		page := fmt.Sprintf("# make test on a fresh clone: steps and slowest tests\n\nFrom the `make first-run` of %s, commit %s, whose totals are in the [README](../README.md#two-commands).\n%s",
			time.Now().UTC().Format("2006-01-02"), commit, details)
		if err := os.WriteFile(o.details, []byte(page), 0o644); err != nil {
			return err
		}
	}
	var errs []error
	for _, m := range ms {
		if m.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.what, m.err))
		}
	}
	return errors.Join(errs...)
}

// env is a fresh machine's environment for a run in dir: caches of its own
// under dir/cache, empty until a first run fills them.
func env(dir string) []string {
	cache := filepath.Join(dir, "cache")
	// Not make first-run's own make variables (make exports its ARGS, and
	// MAKEFLAGS carries them into every make below): a newcomer has none.
	var base []string
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); !slices.Contains([]string{"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "ARGS"}, name) {
			base = append(base, kv)
		}
	}
	return append(base,
		"GOMODCACHE="+filepath.Join(cache, "mod"),
		"GOCACHE="+filepath.Join(cache, "go-build"),
		"LIFELINE_CACHE_DIR="+filepath.Join(cache, "lifeline"),
	)
}

// clone makes dir/src a fresh clone of HEAD, unless a first run made it.
func clone(dir string) (string, error) {
	src := filepath.Join(dir, "src")
	if _, err := os.Stat(src); err == nil {
		return src, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if out, err := exec.Command("git", "clone", "-q", ".", src).CombinedOutput(); err != nil {
		return "", fmt.Errorf("git clone: %w\n%s", err, out)
	}
	return src, nil
}

// measureDev runs make dev until it writes .dev/ready, then interrupts it
// as a user's Ctrl-C would and waits for the teardown.
func measureDev(dir, what string) measurement {
	m := measurement{what: what}
	src, cmd, log, err := launch(dir, "dev", what, func(src string) { _ = os.Remove(filepath.Join(src, ".dev", "ready")) })
	if err != nil {
		m.err = err
		return m
	}
	defer log.Close()
	ready := filepath.Join(src, ".dev", "ready")
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	startTime := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for m.seconds == 0 && m.err == nil {
		select {
		case err := <-exited:
			m.err = fmt.Errorf("make dev exited before it was ready (%v); see %s", err, log.Name())
			return m
		case <-tick.C:
			if _, err := os.Stat(ready); err == nil {
				m.seconds = time.Since(startTime).Seconds()
			} else if time.Since(startTime) > time.Hour {
				m.err = fmt.Errorf("not ready after an hour; see %s", log.Name())
			}
		}
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
	select {
	case <-exited:
	case <-time.After(3 * time.Minute):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		m.err = errors.Join(m.err, fmt.Errorf("make dev did not stop within 3 minutes of Ctrl-C"))
	}
	fmt.Printf("firstrun: %s: %s\n", what, minutes(m.seconds))
	return m
}

// failedSteps names the steps make test recorded as failed, for the
// README's row: ": vet, test-main", or nothing when it recorded none.
func failedSteps(stepsFile string) string {
	data, _ := os.ReadFile(stepsFile)
	var failed []string
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[2] == "FAILED" {
			failed = append(failed, f[0])
		}
	}
	if len(failed) == 0 {
		return ""
	}
	return " in " + strings.Join(failed, ", ")
}

// measureTest runs make test and keeps its step table.
func measureTest(dir, what string) measurement {
	m := measurement{what: what}
	src, cmd, log, err := launch(dir, "test", what, func(string) {})
	if err != nil {
		m.err = err
		return m
	}
	defer log.Close()
	startTime := time.Now()
	if err := cmd.Wait(); err != nil {
		m.err = fmt.Errorf("make test failed (%v)%s; see %s", err, failedSteps(filepath.Join(src, "bin", "test-report", "steps")), log.Name())
	}
	m.seconds = time.Since(startTime).Seconds()
	report := exec.Command("go", "run", "./hack/testreport", filepath.Join(src, "bin", "test-report"))
	out, err := report.Output()
	if err != nil {
		m.err = errors.Join(m.err, fmt.Errorf("hack/testreport: %w", err))
	}
	m.report = string(out)
	fmt.Printf("firstrun: %s: %s\n", what, minutes(m.seconds))
	return m
}

// launch starts make target in dir's clone (made first if need be), after
// prepare has seen the clone.
func launch(dir, target, what string, prepare func(src string)) (string, *exec.Cmd, *os.File, error) {
	src, err := clone(dir)
	if err != nil {
		return "", nil, nil, err
	}
	prepare(src)
	cmd, log, err := start(src, dir, target)
	if err != nil {
		return "", nil, nil, err
	}
	fmt.Printf("firstrun: %s (log %s)\n", what, log.Name())
	return src, cmd, log, nil
}

// start runs make target in src, in a process group of its own (to stop it
// whole), with dir's caches and its output in dir/<target>-<n>.log.
func start(src, dir, target string) (*exec.Cmd, *os.File, error) {
	n := 1
	for ; ; n++ {
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("%s-%d.log", target, n))); err != nil {
			break
		}
	}
	log, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d.log", target, n)))
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command("make", target)
	cmd.Dir, cmd.Env = src, env(dir)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, nil, err
	}
	return cmd, log, nil
}

// render is the figures for the README and make test's step tables for the
// details page (too long for the README).
// render returns the README's rows for this run's measurements (each
// naming its date and commit, so rows of an earlier run of the other
// command can stay beside them) and make test's step tables.
func render(ms []measurement, commit string, o options) (rows []string, details string) {
	when := fmt.Sprintf("%s, %s, %d cores", time.Now().UTC().Format("2006-01-02"), commit, runtime.NumCPU())
	if o.removeRuntime {
		when += ", runtime packages removed first"
	}
	for _, m := range ms {
		result := minutes(m.seconds)
		if m.err != nil {
			// The first line, without the log's path (a scratch folder).
			first, _, _ := strings.Cut(strings.SplitN(m.err.Error(), "\n", 2)[0], "; see ")
			result += " (failed: " + first + ")"
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s |", m.what, result, when))
	}
	var d strings.Builder
	for _, m := range ms {
		if m.report != "" {
			fmt.Fprintf(&d, "\n%s:\n\n```text\n%s```\n", m.what, m.report)
		}
	}
	return rows, d.String()
}

// table is the README's first-run section: make dev's rows, then make
// test's.
func table(rows []string, o options) string {
	var b strings.Builder
	b.WriteString("Measured by `make first-run` on fresh clones, each with empty caches of its own:\n\n| run | time | measured |\n|---|---|---|\n")
	for _, r := range rows {
		b.WriteString(r + "\n")
	}
	if o.details != "" && slices.ContainsFunc(rows, func(r string) bool { return strings.HasPrefix(r, "| `make test`") }) {
		fmt.Fprintf(&b, "\nmake test's step tables and slowest tests: [%s](%s).\n", o.details, o.details)
	}
	return b.String()
}

func minutes(seconds float64) string {
	d := time.Duration(seconds) * time.Second
	return fmt.Sprintf("%d min %02d s", int(d.Minutes()), int(d.Seconds())%60)
}

// writeFigures writes rows into path's first-run section, keeping the
// rows of the command this run did not measure (make dev's after
// -test-only, make test's after -dev-only).
func writeFigures(path string, rows []string, o options) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	begin := bytes.Index(data, []byte(beginMarker))
	end := bytes.Index(data, []byte(endMarker))
	if begin < 0 || end < begin {
		return fmt.Errorf("%s has no %q ... %q markers", path, beginMarker, endMarker)
	}
	var kept []string
	for _, line := range strings.Split(string(data[begin:end]), "\n") {
		switch {
		case o.testOnly && strings.HasPrefix(line, "| `make dev`"):
			kept = append(kept, line)
		case o.devOnly && strings.HasPrefix(line, "| `make test`"):
			rows = append(rows, line)
		}
	}
	var out bytes.Buffer
	out.Write(data[:begin+len(beginMarker)])
	out.WriteString("\n" + table(append(kept, rows...), o))
	out.Write(data[end:])
	return os.WriteFile(path, out.Bytes(), 0o644)
}

func output(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}
