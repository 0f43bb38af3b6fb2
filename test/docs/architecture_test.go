// Package docs checks that the documentation keeps up with the tree.
package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

// Every package under internal/ and pkg/ has a row in the README's
// architecture table (its path in backquotes), so a newcomer finds what
// each one is for.
func TestEveryPackageIsInTheArchitectureTable(t *testing.T) {
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
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
