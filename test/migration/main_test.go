// Package migration tests moving a cluster between OpenKruise and
// Lifeline: OpenKruise v1.9.0's own manager, built from its Go module, runs
// on a local cluster of the package's own, and Lifeline takes over what it
// made.
package migration

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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

var (
	local  *cluster.Cluster
	client kubernetes.Interface
	k8s    ctrlclient.Client
)

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	dir, err := os.MkdirTemp("", "lifeline-migration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	local, err = cluster.Start(context.Background(), cluster.Options{Dir: dir, Progress: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the local cluster:", err, "(logs in", dir+"/logs)")
		os.Exit(1)
	}
	cfg := rest.CopyConfig(local.Config)
	cfg.QPS, cfg.Burst = 200, 400
	client = kubernetes.NewForConfigOrDie(cfg)
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = appsv1alpha1.AddToScheme(scheme)
	if k8s, err = ctrlclient.New(cfg, ctrlclient.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
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

// eventually polls cond until it holds or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, string, error)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := local.Exited(); err != nil {
			return false, err
		}
		ok, why, err := cond(ctx)
		if ctx.Err() == nil {
			last = why
		}
		return ok, err
	})
	if err != nil {
		t.Fatalf("%s: %v; last seen: %s", what, err, last)
	}
}
