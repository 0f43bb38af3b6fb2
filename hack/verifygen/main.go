// Command verifygen fails when the generated files in the working tree (deepcopy
// functions, CRDs, RBAC) differ from what `make generate` produces now. It
// generates into a copy of the tree, so it never touches the files it checks.
package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// generatedDirs are the folders make generate writes to.
var generatedDirs = []string{"api", "config/crd", "config/rbac", "config/bridge", "config/nodeagent", "config/webhook", "charts/lifeline/crds", "charts/lifeline/files"}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "verifygen:", err)
		os.Exit(1)
	}
}

func run() error {
	tmp, err := os.MkdirTemp("", "lifeline-verifygen-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	// Copy what git would commit: tracked files and untracked ones it does
	// not ignore.
	out, err := exec.Command("git", "ls-files", "--cached", "--others", "--exclude-standard", "-z").Output()
	if err != nil {
		return fmt.Errorf("git ls-files: %w", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		data, err := os.ReadFile(name)
		if os.IsNotExist(err) {
			continue // deleted in the working tree
		}
		if err != nil {
			return err
		}
		dst := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return err
		}
	}
	gen := exec.Command("make", "--no-print-directory", "generate")
	gen.Dir = tmp
	gen.Stdout, gen.Stderr = os.Stderr, os.Stderr
	if err := gen.Run(); err != nil {
		return fmt.Errorf("make generate: %w", err)
	}

	var stale []string
	for _, dir := range generatedDirs {
		want, err := readTree(filepath.Join(tmp, dir), dir == "api")
		if err != nil {
			return err
		}
		have, err := readTree(dir, dir == "api")
		if err != nil {
			return err
		}
		for name, data := range want {
			if !bytes.Equal(have[name], data) {
				stale = append(stale, filepath.Join(dir, name))
			}
		}
		for name := range have {
			if _, ok := want[name]; !ok {
				stale = append(stale, filepath.Join(dir, name)+" (no longer generated)")
			}
		}
	}
	if len(stale) > 0 {
		sort.Strings(stale)
		return fmt.Errorf("generated files are stale; run `make generate` and commit:\n  %s", strings.Join(stale, "\n  "))
	}
	fmt.Println("generated files are fresh")
	return nil
}

// readTree returns the generated files under dir by relative path: only the
// deepcopy files when deepcopyOnly (api/ holds hand-written types too), every
// file otherwise.
func readTree(dir string, deepcopyOnly bool) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if os.IsNotExist(err) {
			return filepath.SkipDir
		}
		if err != nil || d.IsDir() {
			return err
		}
		if deepcopyOnly && !strings.HasPrefix(d.Name(), "zz_generated") {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		files[rel] = data
		return err
	})
	return files, err
}
