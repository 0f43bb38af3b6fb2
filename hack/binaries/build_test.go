package binaries

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestExecNameIsWhatGoBuildWrites(t *testing.T) {
	for pkg, want := range map[string]string{
		"go.etcd.io/etcd/server/v3":                       "server",
		"k8s.io/kubernetes/cmd/kube-apiserver":            "kube-apiserver",
		"sigs.k8s.io/controller-tools/cmd/controller-gen": "controller-gen",
		"github.com/hashicorp/consul":                     "consul",
		"helm.sh/helm/v4/cmd/helm":                        "helm",
	} {
		if got := execName(pkg); got != want {
			t.Errorf("execName(%s) = %s, want %s", pkg, got, want)
		}
	}
}

// TestLockFileSaysWhatItWaitsFor: a second taker of a held lock says what
// it waits for, then gets the lock once the first lets go, and a taker of a
// free lock says nothing.
func TestLockFileSaysWhatItWaitsFor(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".lock")
	var first strings.Builder
	unlock, err := LockFile(path, &first, "kube-apiserver")
	if err != nil {
		t.Fatal(err)
	}
	var second syncBuffer
	got := make(chan error)
	go func() {
		unlock2, err := LockFile(path, &second, "kube-apiserver")
		if err == nil {
			unlock2()
		}
		got <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(second.String(), "waiting for kube-apiserver") {
		if time.Now().After(deadline) {
			t.Fatalf("the second taker said %q while the lock was held", second.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-got:
		t.Fatalf("the second taker got a held lock (err %v)", err)
	default:
	}
	unlock()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if first.Len() != 0 {
		t.Errorf("the first taker of a free lock said %q", first.String())
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Kubernetes' binaries are stamped with their version; others are not;
// all are stripped.
func TestLinkFlags(t *testing.T) {
	kube := linkFlags(&binary{module: "k8s.io/kubernetes"}, "v1.36.3")
	if len(kube) != 1 || !strings.Contains(kube[0], "k8s.io/component-base/version.gitVersion=v1.36.3") ||
		!strings.Contains(kube[0], "gitMajor=1 ") || !strings.Contains(kube[0], "gitMinor=36 ") || !strings.HasPrefix(kube[0], "-ldflags=-s -w -X ") {
		t.Errorf("flags %v", kube)
	}
	if other := linkFlags(&binary{module: "go.etcd.io/etcd/server/v3"}, "v3.6.8"); !slices.Equal(other, []string{"-ldflags=-s -w"}) {
		t.Errorf("etcd flags %v", other)
	}
}

// A wrapper main of this repository is cached by its source: edited, it
// is built again; a module's own main is cached by version alone.
func TestBuildRecipeFollowsTheWrappersSource(t *testing.T) {
	dir := t.TempDir()
	wrapper := &binary{module: "github.com/cert-manager/cert-manager", goPackage: "github.com/lifeline-k8s/lifeline/hack/tools/certmanager"}
	recipe := func() string {
		r, err := buildRecipe(wrapper, dir)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	first := recipe()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main // with a flag\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if second := recipe(); first == "" || second == first {
		t.Errorf("recipes %q then %q: want a change with the source", first, second)
	}
	if r, _ := buildRecipe(&binary{module: "sigs.k8s.io/kwok", goPackage: "sigs.k8s.io/kwok/cmd/kwok"}, dir); r != "" {
		t.Errorf("kwok's recipe %q, want none", r)
	}
}
