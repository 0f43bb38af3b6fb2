package binaries

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// A plannedBinary is a binary of its pinned version and its place in the
// cache.
type plannedBinary struct {
	*binary
	version, toolsDir string
	dir, path         string
}

// groupKey is what binaries built by one go build share: the tools module
// and the flags.
func (p *plannedBinary) groupKey() string {
	return p.toolsDir + "\x00" + strings.Join(linkFlags(p.binary, p.version), " ")
}

// BuildBinaries returns the paths of the named binaries by name, building
// those missing from the cache: one go build per tools module and flags (a
// go build of several commands compiles their shared packages once and
// links them while it compiles the rest), and those builds at once.
// Concurrent callers, in this process or others, wait for one build
// instead of racing.
func BuildBinaries(ctx context.Context, names []string, progress io.Writer) (map[string]string, error) {
	paths := map[string]string{}
	groups := map[string][]*plannedBinary{}
	for _, name := range names {
		p, err := planBinary(name)
		if err != nil {
			return nil, err
		}
		paths[name] = p.path
		if _, err := os.Stat(p.path); err != nil {
			groups[p.groupKey()] = append(groups[p.groupKey()], p)
		}
	}
	if progress == nil {
		progress = io.Discard
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		n    int
	)
	for _, key := range slices.Sorted(maps.Keys(groups)) {
		wg.Add(1)
		n++
		go func(group []*plannedBinary, n int) {
			defer wg.Done()
			if err := buildGroup(ctx, group, fmt.Sprintf("%d of %d", n, len(groups)), progress); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}(groups[key], n)
	}
	wg.Wait()
	return paths, errors.Join(errs...)
}

// buildGroup builds the binaries of one tools module and flags with one
// go build into a temporary folder beside the cache's, then moves each
// into its place. Each binary's folder is locked (in name order, so two
// processes never wait on each other), and what another process built
// meanwhile is left alone.
func buildGroup(ctx context.Context, group []*plannedBinary, which string, progress io.Writer) error {
	slices.SortFunc(group, func(a, b *plannedBinary) int { return strings.Compare(a.name, b.name) })
	var missing []*plannedBinary
	for _, p := range group {
		if err := os.MkdirAll(p.dir, 0o755); err != nil {
			return err
		}
		unlock, err := LockFile(filepath.Join(p.dir, ".lock"), progress, p.name)
		if err != nil {
			return err
		}
		defer unlock()
		if _, err := os.Stat(p.path); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var names, pkgs []string
	for _, p := range missing {
		names = append(names, p.name)
		pkgs = append(pkgs, p.goPackage)
	}
	first := missing[0]
	times := filepath.Join(filepath.Dir(first.dir), ".build-seconds.json")
	estimate := ""
	if s, ok := readBuildSeconds(times)[strings.Join(names, ",")]; ok {
		estimate = fmt.Sprintf("; %s here last time", (time.Duration(s) * time.Second).String())
	}
	var modules []string
	for _, p := range missing {
		if m := p.module + " " + p.version; !slices.Contains(modules, m) {
			modules = append(modules, m)
		}
	}
	fmt.Fprintf(progress, "building %s (%s; group %s; first time only%s)\n", strings.Join(names, ", "), strings.Join(modules, ", "), which, estimate)
	tmp, err := os.MkdirTemp(filepath.Dir(first.dir), ".build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	start := time.Now()
	args := append([]string{"build", "-o", tmp + string(filepath.Separator)}, linkFlags(first.binary, first.version)...)
	cmd := exec.CommandContext(ctx, "go", append(args, pkgs...)...)
	cmd.Dir = first.toolsDir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s: %w\n%s", strings.Join(names, ", "), err, out)
	}
	for _, p := range missing {
		if err := os.Rename(filepath.Join(tmp, execName(p.goPackage)), p.path); err != nil {
			return err
		}
	}
	took := time.Since(start).Round(time.Second)
	fmt.Fprintf(progress, "built %s in %s\n", strings.Join(names, ", "), took)
	writeBuildSeconds(times, strings.Join(names, ","), int(took.Seconds()))
	return nil
}

var majorVersion = regexp.MustCompile(`^v[0-9]+$`)

// execName is the file go build -o DIR/ writes for a main package: its
// last path element, or the one before a major version suffix (/v3).
func execName(pkg string) string {
	dir, elem := path.Split(pkg)
	if majorVersion.MatchString(elem) && dir != "" {
		return path.Base(dir)
	}
	return elem
}

// readBuildSeconds and writeBuildSeconds keep how long each group took to
// build on this machine, for the next first run's estimate (a cache
// emptied but for this file, or a version bump).
func readBuildSeconds(file string) map[string]int {
	m := map[string]int{}
	if data, err := os.ReadFile(file); err == nil {
		_ = json.Unmarshal(data, &m)
	}
	return m
}

var buildSecondsMu sync.Mutex

func writeBuildSeconds(file, key string, seconds int) {
	buildSecondsMu.Lock()
	defer buildSecondsMu.Unlock()
	m := readBuildSeconds(file)
	m[key] = seconds
	if data, err := json.Marshal(m); err == nil {
		_ = os.WriteFile(file, data, 0o644)
	}
}
