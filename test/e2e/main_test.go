// Package e2e tests Lifeline on the local cluster that make dev runs: a real
// control plane (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler) with kwok nodes, started once for the package.
package e2e

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/lifeline-k8s/lifeline/hack/cluster"
	"github.com/lifeline-k8s/lifeline/test/testenv"
)

var (
	local  *cluster.Cluster
	client kubernetes.Interface
)

func TestMain(m *testing.M) {
	// Two real nodes beside kwok's, for the tests whose pods must run real
	// containers (realnode_test.go); the rest never tolerate them.
	os.Exit(testenv.RunWith(m, "lifeline-e2e-", cluster.Options{RealNodes: 2}, func(c *cluster.Cluster) error {
		local = c
		cfg := rest.CopyConfig(local.Config)
		cfg.QPS, cfg.Burst = 200, 400 // the tests' own client must not be what is slow
		client = kubernetes.NewForConfigOrDie(cfg)
		if err := installLifeline(context.Background()); err != nil {
			return fmt.Errorf("installing Lifeline: %w", err)
		}
		return nil
	}))
}

// newNamespace creates a namespace for one test, waits until pods can be
// created in it, and deletes it afterwards.
func newNamespace(t *testing.T) string {
	t.Helper()
	return testenv.Namespace(t, client)
}

// alongside runs a test beside the others marked so, after every test not
// marked (go test holds parallel tests until the sequential ones are done):
// a test that shares nothing with the others but the cluster and the
// manager (a namespace, bridges and registries of its own), changes
// nothing cluster-wide (nodes, roles, webhooks, the manager's processes or
// flags), runs no hook operator that follows every workload of the cluster
// (seed 001's release the hooks of the others' workloads: seen on 11-29)
// and judges nothing the others move (the manager's metrics). Most of these wait on hooks, registries and budgets rather
// than the CPU, so their waits overlap (issue 45).
func alongside(t *testing.T) {
	t.Helper()
	t.Parallel()
	together.Store(true) // every test in line is done (go test runs them first)
}

// together says the tests run alongside others have started.
var together atomic.Bool

// inLine fails a test that does what alongside's tests must not (what
// says what) when it runs beside them: the guard on that rule.
func inLine(t *testing.T, what string) {
	t.Helper()
	if together.Load() {
		t.Fatalf("%s: only a test in line may (not one marked alongside)", what)
	}
}

// eventually polls cond until it holds or the timeout passes, then fails the
// test with the last reason cond gave.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, string, error)) {
	t.Helper()
	testenv.Eventually(t, local, timeout, what, cond)
}

func podCondition(pod *corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// followPods follows the pods of ns matching selector (all when empty)
// from now on, with a watch of its own, and returns the fewest and the
// most of them that counted at any moment.
func followPods(t *testing.T, ns, selector string, counted func(*corev1.Pod) bool) (fewest, most func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]bool{}
	for i := range list.Items {
		in[list.Items[i].Name] = counted(&list.Items[i])
	}
	count := func() int {
		n := 0
		for _, c := range in {
			if c {
				n++
			}
		}
		return n
	}
	low, high := count(), count()
	w, err := client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	go func() {
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			mu.Lock()
			in[pod.Name] = ev.Type != watch.Deleted && counted(pod)
			n := count()
			low, high = min(low, n), max(high, n)
			mu.Unlock()
		}
	}()
	read := func(v *int) func() int {
		return func() int {
			mu.Lock()
			defer mu.Unlock()
			return *v
		}
	}
	return read(&low), read(&high)
}
