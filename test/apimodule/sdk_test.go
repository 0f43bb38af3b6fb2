package apimodule

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

const sdkModule = "github.com/lifeline-k8s/lifeline/pkg"

// The SDK module needs no replace directives and requires only the API
// module, Kubernetes' client libraries and controller-runtime (and what
// those already bring: Prometheus' client, k8s.io/utils, JSON patch for
// its tests), never k8s.io/kubernetes.
func TestSDKModuleStandsAlone(t *testing.T) {
	f := parseMod(t, filepath.Join(repoDir(t, "pkg"), "go.mod"))
	if f.Module.Mod.Path != sdkModule || len(f.Replace) != 0 {
		t.Errorf("module %s with %d replace directives", f.Module.Mod.Path, len(f.Replace))
	}
	allowed := map[string]bool{apiModule: true, "k8s.io/api": true, "k8s.io/apimachinery": true, "k8s.io/client-go": true,
		"sigs.k8s.io/controller-runtime": true, "github.com/prometheus/client_golang": true, "k8s.io/utils": true,
		"gopkg.in/evanphx/json-patch.v4": true}
	for _, r := range f.Require {
		if strings.HasPrefix(r.Mod.Path, "k8s.io/kubernetes") || (!r.Indirect && !allowed[r.Mod.Path]) {
			t.Errorf("the SDK module requires %s", r.Mod.Path)
		}
	}
}

// TestExampleBuildsAgainstTheSDK: a fresh module outside the repository
// gets the SDK the way `go get` and `go mod tidy` would (the SDK and API
// modules pointed at this copy, everything else from the module cache:
// GOPROXY=off), and builds examples/registry-operator unchanged.
func TestExampleBuildsAgainstTheSDK(t *testing.T) {
	dir := t.TempDir()
	goMod := "module example.com/registryoperator\n\ngo 1.26.0\n\n" +
		"replace " + apiModule + " => " + repoDir(t, "api") + "\n" +
		"replace " + sdkModule + " => " + repoDir(t, "pkg") + "\n"
	var sums []string
	for _, m := range []string{"pkg", "api"} {
		data, err := os.ReadFile(filepath.Join(repoDir(t, m), "go.sum"))
		if err != nil {
			t.Fatal(err)
		}
		sums = append(sums, string(data))
	}
	example, err := os.ReadFile(filepath.Join(repoDir(t, "examples"), "registry-operator", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"go.mod": goMod, "go.sum": strings.Join(sums, ""), "main.go": string(example)} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := offline(t, dir)
	run("go", "get", sdkModule+"@v0.0.0-00010101000000-000000000000")
	run("go", "mod", "tidy")
	run("go", "build", "-o", "registry-operator", ".")
	if out := run(filepath.Join(dir, "registry-operator"), "-help"); !strings.Contains(out, "-consul") {
		t.Errorf("the example's help: %s", out)
	}
	for _, pkg := range strings.Fields(run("go", "list", "-deps", ".")) {
		if strings.HasPrefix(pkg, "k8s.io/kubernetes") {
			t.Errorf("building against the SDK pulls in %s", pkg)
		}
	}
}

// offline runs commands in dir as a module outside the repository, with
// no network (GOPROXY=off) and no workspace, failing the test on an error.
func offline(t *testing.T, dir string) func(name string, args ...string) string {
	return func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
}

func parseMod(t *testing.T, path string) *modfile.File {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse(path, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func repoDir(t *testing.T, name string) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", name))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
