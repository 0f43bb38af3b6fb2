package cluster

import (
	"path/filepath"
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
	unlock, err := lockFile(path, &first, "kube-apiserver")
	if err != nil {
		t.Fatal(err)
	}
	var second syncBuffer
	got := make(chan error)
	go func() {
		unlock2, err := lockFile(path, &second, "kube-apiserver")
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
