// Command alignmods keeps every module that make dev and make test compile
// at one version of each dependency they share. Go's build cache shares a
// compiled package between modules only when the package and everything it
// imports are the same versions, so one differing golang.org/x/sys makes
// client-go, and everything above it, compile twice on a cold machine: once
// for Lifeline, once for the control plane's binaries (issue 45).
//
// Without flags it raises each module's lower versions to the highest any
// of them needs (go get, then go mod tidy) until they agree; with -check it
// only lists the differences and fails when there are any (make
// verify-generated).
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/semver"
)

// modules are the repository's modules that share dependencies; the tools
// modules under hack/tools/*, pinned to other Kubernetes versions (OpenKruise,
// Helm, Consul, Prometheus, cert-manager), are left alone.
var modules = []string{".", "api", "pkg", "cmd/kubectl-lifeline", "hack/tools"}

func main() {
	check := flag.Bool("check", false, "only list the differences; fail when there are any")
	flag.Parse()
	if err := run(*check, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "alignmods:", err)
		os.Exit(1)
	}
}

func run(check bool, out io.Writer) error {
	for round := 0; round < 5; round++ {
		if !check {
			for _, m := range modules {
				if err := tidy(m); err != nil {
					return err
				}
			}
		}
		graphs := map[string]map[string]string{}
		for _, m := range modules {
			g, err := buildList(m)
			if err != nil {
				return err
			}
			graphs[m] = g
		}
		raises := plan(graphs)
		if len(raises) == 0 {
			return nil
		}
		if check {
			for _, m := range slices.Sorted(maps.Keys(raises)) {
				fmt.Fprintf(out, "%s: %s\n", m, strings.Join(raises[m], " "))
			}
			return fmt.Errorf("modules disagree on the versions above (each should be raised to them): run go run ./hack/alignmods")
		}
		for _, m := range slices.Sorted(maps.Keys(raises)) {
			fmt.Fprintf(out, "%s: raising %s\n", m, strings.Join(raises[m], " "))
			// A raise in api or pkg changes what the modules that use
			// their folders require: the next round tidies them first.
			if err := raise(m, raises[m]); err != nil {
				return err
			}
		}
	}
	return fmt.Errorf("versions still differ after 5 rounds")
}

// plan returns, per module, path@version for each dependency it holds at a
// lower version than another module does.
func plan(graphs map[string]map[string]string) map[string][]string {
	highest := map[string]string{}
	for _, g := range graphs {
		for path, v := range g {
			if h, ok := highest[path]; !ok || semver.Compare(v, h) > 0 {
				highest[path] = v
			}
		}
	}
	raises := map[string][]string{}
	for m, g := range graphs {
		for _, path := range slices.Sorted(maps.Keys(g)) {
			if g[path] != highest[path] {
				raises[m] = append(raises[m], path+"@"+highest[path])
			}
		}
	}
	return raises
}

// buildList is the part of a module's build list (the workspace's, where
// the module has a go.work) that its packages, tests and tools compile, by
// path, with replaced modules at their replacement's version; the main
// modules and local replacements are left out.
func buildList(dir string) (map[string]string, error) {
	cmd := exec.Command("go", "list", "-e", "-deps", "-test", "-tags=tools", "-json=Module", "./...")
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	data, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps in %s: %w", dir, err)
	}
	type module struct {
		Path, Version string
		Main          bool
		Replace       *struct{ Path, Version string }
	}
	list := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(data))
	for dec.More() {
		var pkg struct{ Module *module }
		if err := dec.Decode(&pkg); err != nil {
			return nil, err
		}
		m := pkg.Module
		if m == nil { // the standard library
			continue
		}
		v := m.Version
		if m.Replace != nil {
			v = m.Replace.Version
		}
		if m.Main || v == "" {
			continue
		}
		list[m.Path] = v
	}
	return list, nil
}

// raise raises a module's requirements: go get and go mod tidy, or, in a
// module built in a workspace of its own (whose placeholder requirements
// no registry serves, so go get and tidy cannot load it), go mod edit and
// go work sync.
func raise(dir string, versions []string) error {
	if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
		args := []string{"mod", "edit"}
		for _, v := range versions {
			args = append(args, "-require="+v)
		}
		if err := goCmd(dir, args...); err != nil {
			return err
		}
		return nil
	}
	// One at a time: a version asked for may already be passed by what
	// another raise requires (x/mod v0.39.0 needs x/net v0.57.0, not the
	// v0.56.0 asked); that one is left to the next round.
	for _, v := range versions {
		cmd := exec.Command("go", "get", v)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: go get %s: %s", dir, v, out)
		}
	}
	return nil
}

// tidy is go mod tidy, or go work sync in a module built in a workspace of
// its own.
func tidy(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
		return goCmd(dir, "work", "sync")
	}
	return goCmd(dir, "mod", "tidy")
}

func goCmd(dir string, args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s in %s: %w", strings.Join(args, " "), filepath.Clean(dir), err)
	}
	return nil
}
