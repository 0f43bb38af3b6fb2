package e2e

import (
	"context"
	"errors"
	"path/filepath"
	"syscall"

	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/lifeline-k8s/lifeline/hack/binaries"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
	"github.com/lifeline-k8s/lifeline/internal/manager"
)

var (
	k8s      ctrlclient.WithWatch
	lifeline *cluster.Lifeline
)

// managerArgs are the flags the tests run lifeline-manager with beyond
// make dev's: a short hook-wait warning, so tests can see it, and
// OpenKruise's RecreatePodWhenChangeVCTInCloneSetGate, which OpenKruise's
// own e2e runs with (as it runs with all its alpha gates on).
var managerArgs = []string{"--hook-wait-warning=2s", "--cloneset-recreate-pods-when-vct-changes"}

// installLifeline installs the CRDs and runs lifeline-manager as make dev
// runs it: the built binary, under its own identity bound by the generated
// RBAC, with its webhooks called by the API server over TLS. Its log is
// the cluster's logs/lifeline-manager.log.
func installLifeline(ctx context.Context) error {
	root, err := binaries.RepoRoot()
	if err != nil {
		return err
	}
	if _, err := envtest.InstallCRDs(local.Config, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(root, "config", "crd", "bases")}, ErrorIfPathMissing: true,
	}); err != nil {
		return err
	}
	testConfig := rest.CopyConfig(local.Config)
	testConfig.QPS, testConfig.Burst = 200, 400 // the tests' own client must not be what is slow
	if k8s, err = ctrlclient.NewWithWatch(testConfig, ctrlclient.Options{Scheme: manager.Scheme()}); err != nil {
		return err
	}
	lifeline, err = local.StartLifeline(ctx, cluster.LifelineOptions{Root: root, Dir: local.Dir, QPS: 50, Args: managerArgs})
	return err
}

// restartManager stops lifeline-manager as a rollout does (SIGTERM: it
// hands its leader lease back) and starts it again: a new process, a new
// cache, new expectations.
func restartManager() error {
	if together.Load() {
		return errors.New("restarting the manager: only a test in line may (not one marked alongside)")
	}
	return local.RestartLifeline(context.Background(), lifeline, syscall.SIGTERM)
}

// counter reads a counter from the running manager's metrics endpoint; a
// restart starts it from zero, as it would in a cluster.
func counter(name string, labels map[string]string) float64 {
	return metricAt(lifeline.MetricsURL, name, labels)
}

// metricAt reads a counter or gauge from a metrics endpoint (see
// cluster.Scraper.Value).
func metricAt(url, name string, labels map[string]string) float64 {
	return lifeline.Scraper.Value(url, name, labels)
}
