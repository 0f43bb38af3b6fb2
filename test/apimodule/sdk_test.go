package apimodule

import (
	"os"
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

// TestExampleBuildsAgainstTheSDK: a new module outside the repository gets
// the SDK the way its author would, `go get` and `go mod tidy` with no
// replace directive, and builds examples/registry-operator unchanged.
func TestExampleBuildsAgainstTheSDK(t *testing.T) {
	dir, run := stranger(t, "example.com/registryoperator")
	example, err := os.ReadFile(filepath.Join(repoDir(t, "examples"), "registry-operator", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), example, 0o644); err != nil {
		t.Fatal(err)
	}
	run("go", "get", sdkModule)
	run("go", "mod", "tidy")
	if f := parseMod(t, filepath.Join(dir, "go.mod")); len(f.Replace) != 0 {
		t.Errorf("the operator's go.mod has %d replace directives", len(f.Replace))
	}
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
