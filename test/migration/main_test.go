// Package migration tests moving a cluster between OpenKruise and
// Lifeline: OpenKruise v1.9.0's own manager, built from its Go module, runs
// on a local cluster of the package's own, and Lifeline takes over what it
// made.
package migration

import (
	"context"
	"os"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	policyv1beta1 "github.com/lifeline-k8s/lifeline/api/policy/v1beta1"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
	"github.com/lifeline-k8s/lifeline/test/testenv"
)

var (
	local  *cluster.Cluster
	client kubernetes.Interface
	k8s    ctrlclient.Client
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, "lifeline-migration-", func(c *cluster.Cluster) error {
		local = c
		cfg := rest.CopyConfig(local.Config)
		cfg.QPS, cfg.Burst = 200, 400
		client = kubernetes.NewForConfigOrDie(cfg)
		scheme := runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(scheme); err != nil {
			return err
		}
		for _, add := range []func(*runtime.Scheme) error{appsv1alpha1.AddToScheme, appsv1beta1.AddToScheme, policyv1beta1.AddToScheme} {
			if err := add(scheme); err != nil {
				return err
			}
		}
		var err error
		k8s, err = ctrlclient.New(cfg, ctrlclient.Options{Scheme: scheme})
		return err
	}))
}

func newNamespace(t *testing.T) string {
	t.Helper()
	return testenv.Namespace(t, client)
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, string, error)) {
	t.Helper()
	testenv.Eventually(t, local, timeout, what, cond)
}
