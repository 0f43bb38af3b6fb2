// Package e2e tests Lifeline on the local cluster that make dev runs: a real
// control plane (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler) with kwok nodes, started once for the package.
package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

var (
	local  *cluster.Cluster
	client kubernetes.Interface
)

func TestMain(m *testing.M) {
	// envtest's helpers log through controller-runtime; the tests have
	// nothing to say there.
	ctrllog.SetLogger(logr.Discard())
	dir, err := os.MkdirTemp("", "lifeline-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx := context.Background()
	local, err = cluster.Start(ctx, cluster.Options{Dir: dir, Progress: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the local cluster:", err, "(logs in", dir+"/logs)")
		os.Exit(1)
	}
	cfg := rest.CopyConfig(local.Config)
	cfg.QPS, cfg.Burst = 200, 400 // the tests' own client must not be what is slow
	client = kubernetes.NewForConfigOrDie(cfg)
	if err := installLifeline(ctx); err != nil {
		local.Stop()
		fmt.Fprintln(os.Stderr, "installing Lifeline:", err)
		os.Exit(1)
	}
	code := m.Run()
	local.Stop()
	if code == 0 && os.Getenv("LIFELINE_E2E_KEEP_LOGS") == "" {
		os.RemoveAll(dir)
	} else {
		fmt.Fprintln(os.Stderr, "component logs kept in", dir+"/logs")
	}
	os.Exit(code)
}

// newNamespace creates a namespace for one test, waits until pods can be
// created in it, and deletes it afterwards.
func newNamespace(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: name[:min(len(name), 40)] + "-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	if err := cluster.WaitForServiceAccount(ctx, client, ns.Name); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// eventually polls cond until it holds or the timeout passes, then fails the
// test with the last reason cond gave.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, string, error)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := local.Exited(); err != nil {
			return false, err
		}
		ok, why, err := cond(ctx)
		if ctx.Err() == nil {
			last = why // a reason cut short by the deadline says nothing
		}
		return ok, err
	})
	if err != nil {
		t.Fatalf("%s: %v; last seen: %s", what, err, last)
	}
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
