// Package testenv is what the test packages share: for those that run on a
// local cluster of their own (test/e2e, test/migration), the cluster's life
// around the package's tests, a namespace per test and polling with a
// deadline; for every suite, one scheme and its client.
package testenv

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

// Run starts a local cluster in a new folder named after prefix, calls
// setup with it, runs the tests, stops the cluster, and returns the exit
// code for TestMain. The components' logs are kept when a test failed or
// LIFELINE_E2E_KEEP_LOGS is set.
func Run(m *testing.M, prefix string, setup func(*cluster.Cluster) error) int {
	return RunWith(m, prefix, cluster.Options{}, setup)
}

// RunWith is Run with a cluster of opts (its Dir and Progress are Run's).
func RunWith(m *testing.M, prefix string, opts cluster.Options, setup func(*cluster.Cluster) error) int {
	// envtest's helpers log through controller-runtime; the tests have
	// nothing to say there.
	ctrllog.SetLogger(logr.Discard())
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	opts.Dir, opts.Progress = dir, os.Stderr
	c, err := cluster.Start(context.Background(), opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the local cluster:", err, "(logs in", dir+"/logs)")
		return 1
	}
	if err := setup(c); err != nil {
		c.Stop()
		fmt.Fprintln(os.Stderr, "setting up:", err, "(logs in", dir+"/logs)")
		return 1
	}
	code := m.Run()
	c.Stop()
	for _, err := range c.StopErrors() {
		fmt.Fprintln(os.Stderr, "tearing the cluster down:", err)
		code = 1
	}
	if code == 0 && os.Getenv("LIFELINE_E2E_KEEP_LOGS") == "" {
		os.RemoveAll(dir)
	} else {
		fmt.Fprintln(os.Stderr, "component logs kept in", dir+"/logs")
	}
	return code
}

// Namespace creates a namespace for one test, waits until pods can be
// created in it, and deletes it afterwards.
func Namespace(t testing.TB, client kubernetes.Interface) string {
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

// Eventually polls cond until it holds or the timeout passes, then fails
// the test with the last reason cond gave; a component of cluster c (nil:
// none watched) that exits fails it at once.
func Eventually(t testing.TB, c *cluster.Cluster, timeout time.Duration, what string, cond func(ctx context.Context) (bool, string, error)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if c != nil {
			if err := c.Exited(); err != nil {
				return false, err
			}
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
