package cluster

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/lifeline-k8s/lifeline/hack/binaries"
)

// A command built once is not linked again for the next cluster: the
// second build finds the shared binary up to date and leaves that file in
// place, and each cluster gets a copy of its own.
func TestABuildIsSharedNotLinkedAgain(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles a command")
	}
	root, err := binaries.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b := build{root: root, pkg: "./hack/trackedfiles"}
	dir := t.TempDir()
	shared := func() os.FileInfo {
		t.Helper()
		fi, err := os.Stat(filepath.Join(b.dir(b.goarch(context.Background())), b.name()))
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	first, second := filepath.Join(dir, "one", "trackedfiles"), filepath.Join(dir, "two", "trackedfiles")
	if err := b.to(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	before := shared()
	if err := b.to(context.Background(), second); err != nil {
		t.Fatal(err)
	}
	// go build touches an up-to-date target; a link writes a new file.
	if after := shared(); !os.SameFile(before, after) {
		t.Error("the second build wrote the shared binary again: linked twice")
	}
	a, _ := os.ReadFile(first)
	c, _ := os.ReadFile(second)
	if len(a) == 0 || !bytes.Equal(a, c) {
		t.Errorf("the two copies differ (%d and %d bytes)", len(a), len(c))
	}
	if fi, err := os.Stat(second); err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Errorf("the copy is not executable: %v %v", fi.Mode(), err)
	}
}
