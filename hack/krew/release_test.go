package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/lifeline-k8s/lifeline/hack/binaries"
)

// TestKrewInstallsThePlugin: the manifest rendered for this machine's
// platform installs with krew itself (built from its pinned module), as a
// krew user's `kubectl krew install` would, and the installed plugin runs.
func TestKrewInstallsThePlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin and krew")
	}
	ctx := context.Background()
	root, err := binaries.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	platform := runtime.GOOS + "/" + runtime.GOARCH
	if _, err := Release(ctx, root, "v0.0.0-test", out, []string{platform}); err == nil {
		t.Fatal("a manifest naming platforms that were not built was rendered")
	}
	tmpl, err := os.ReadFile(filepath.Join(root, ".krew.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The manifest for this platform alone: krew validates every entry.
	manifest, err := render(onlyPlatform(t, string(tmpl), runtime.GOOS, runtime.GOARCH), "v0.0.0-test", map[string]string{})
	if err == nil || !strings.Contains(err.Error(), "no archive") {
		t.Fatalf("render without archives: %v", err)
	}
	name, sum, err := archive(ctx, root, out, runtime.GOOS, runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	manifest, err = render(onlyPlatform(t, string(tmpl), runtime.GOOS, runtime.GOARCH), "v0.0.0-test", map[string]string{name: sum})
	if err != nil {
		t.Fatal(err)
	}
	var parsed map[string]any
	if err := yaml.Unmarshal(manifest, &parsed); err != nil {
		t.Fatalf("rendered manifest: %v\n%s", err, manifest)
	}
	file := filepath.Join(out, "lifeline.yaml")
	if err := os.WriteFile(file, manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	krew, err := binaries.Binary(ctx, "krew", os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	krewRoot := t.TempDir()
	install := exec.Command(krew, "install", "--manifest="+file, "--archive="+filepath.Join(out, name))
	install.Env = append(os.Environ(), "KREW_ROOT="+krewRoot, "KREW_NO_UPGRADE_CHECK=1")
	if o, err := install.CombinedOutput(); err != nil {
		t.Fatalf("krew install: %v\n%s", err, o)
	}
	help, err := exec.Command(filepath.Join(krewRoot, "bin", "kubectl-lifeline"), "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(help), "kubectl lifeline status clone/web") {
		t.Errorf("the installed plugin: %v\n%s", err, help)
	}
}

// onlyPlatform keeps the template's entry for goos/goarch alone.
func onlyPlatform(t *testing.T, tmpl, goos, goarch string) string {
	t.Helper()
	head, rest, ok := strings.Cut(tmpl, "  platforms:\n")
	if !ok {
		t.Fatal(".krew.yaml has no platforms")
	}
	for _, entry := range strings.SplitAfter(rest, "bin: kubectl-lifeline\n") {
		if strings.Contains(entry, "os: "+goos+"\n") && strings.Contains(entry, "arch: "+goarch+"\n") {
			return head + "  platforms:\n" + entry
		}
	}
	t.Fatalf("no .krew.yaml entry for %s/%s", goos, goarch)
	return ""
}
