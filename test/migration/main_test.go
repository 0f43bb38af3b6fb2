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

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

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
		var err error
		k8s, err = testenv.Client(cfg)
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
