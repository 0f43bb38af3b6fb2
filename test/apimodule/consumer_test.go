// Package apimodule tests Lifeline's public API module the way a hook
// operator meets it: from a module of its own, outside this repository.
package apimodule

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

const apiModule = "github.com/lifeline-k8s/lifeline/api"

// The API module needs no replace directives and nothing beyond k8s.io/api
// and k8s.io/apimachinery, so `go get` of it works from any operator's
// go.mod, whatever controller-runtime or Kubernetes it builds against.
func TestAPIModuleStandsAlone(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoDir(t, "api"), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse("go.mod", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.Module.Mod.Path != apiModule || len(f.Replace) != 0 {
		t.Errorf("module %s with %d replace directives", f.Module.Mod.Path, len(f.Replace))
	}
	for _, r := range f.Require {
		if !r.Indirect && r.Mod.Path != "k8s.io/api" && r.Mod.Path != "k8s.io/apimachinery" {
			t.Errorf("the API module requires %s", r.Mod.Path)
		}
	}
}

// TestHookOperatorBuildsAgainstTheAPIModule: a hook operator's new module
// gets the API module with `go get` (no replace directive), and builds and
// runs a program using the CloneSet types and the lifecycle constants,
// pulling in neither client-go nor controller-runtime nor k8s.io/kubernetes.
func TestHookOperatorBuildsAgainstTheAPIModule(t *testing.T) {
	dir, run := stranger(t, "example.com/hookoperator")
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(operator), 0o644); err != nil {
		t.Fatal(err)
	}
	run("go", "get", apiModule)
	run("go", "mod", "tidy")
	if f := parseMod(t, filepath.Join(dir, "go.mod")); len(f.Replace) != 0 {
		t.Errorf("the operator's go.mod has %d replace directives", len(f.Replace))
	}
	run("go", "build", "-o", "operator", ".")
	if out := run(filepath.Join(dir, "operator")); out != "CloneSet apps.kruise.io/v1alpha1 lifecycle.apps.kruise.io/state=PreparingDelete example.com/registered\n" {
		t.Errorf("the operator printed %q", out)
	}
	for _, pkg := range strings.Fields(run("go", "list", "-deps", ".")) {
		if strings.HasPrefix(pkg, "k8s.io/kubernetes") || strings.HasPrefix(pkg, "sigs.k8s.io/controller-runtime") || strings.HasPrefix(pkg, "k8s.io/client-go") {
			t.Errorf("building against the API module pulls in %s", pkg)
		}
	}
}

// operator is the throw-away hook operator's program.
const operator = `package main

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
)

func main() {
	scheme := runtime.NewScheme()
	if err := appsv1alpha1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	cs := &appsv1alpha1.CloneSet{}
	cs.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{FinalizersHandler: []string{"example.com/registered"}}}
	kinds, _, err := scheme.ObjectKinds(cs)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s %s %s=%s %s\n", kinds[0].Kind, kinds[0].GroupVersion(), pub.LifecycleStateKey, pub.LifecycleStatePreparingDelete,
		cs.Spec.Lifecycle.PreDelete.FinalizersHandler[0])
}
`
