// Package docs checks that the documentation keeps up with the tree.
package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lifeline-k8s/lifeline/hack/binaries"
)

// Every package under internal/ and pkg/ has a row in the README's
// architecture table (its path in backquotes), so a newcomer finds what
// each one is for.
func TestEveryPackageIsInTheArchitectureTable(t *testing.T) {
	root, readme := readme(t)
	var table strings.Builder
	for _, line := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(line, "| `") {
			table.WriteString(line + "\n")
		}
	}
	packages := map[string]bool{}
	for _, top := range []string{"internal", "pkg"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
				rel, _ := filepath.Rel(root, filepath.Dir(path))
				packages[filepath.ToSlash(rel)] = true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(packages) < 20 {
		t.Fatalf("found %d packages: the walk is wrong", len(packages))
	}
	for p := range packages {
		if !strings.Contains(table.String(), "`"+p+"`") {
			t.Errorf("package %s has no row in the README's architecture table", p)
		}
	}
}

// The README's Status section reads in a minute: one short line per
// capability (the detail is in docs/status.md).
func TestStatusRowsAreShort(t *testing.T) {
	_, readme := readme(t)
	_, status, ok := strings.Cut(string(readme), "\n## Status\n")
	if !ok {
		t.Fatal("no Status section")
	}
	status, _, _ = strings.Cut(status, "\n## ")
	rows := 0
	for _, line := range strings.Split(status, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| Capability") {
			continue
		}
		rows++
		if len(line) > 220 {
			t.Errorf("Status row of %d characters (at most 220; the detail belongs in docs/status.md): %.80s…", len(line), line)
		}
	}
	if rows < 5 {
		t.Errorf("%d Status rows: the section was not found whole", rows)
	}
}

// readme is the repository's root and its README.
func readme(t *testing.T) (string, []byte) {
	t.Helper()
	root, err := binaries.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return root, data
}
