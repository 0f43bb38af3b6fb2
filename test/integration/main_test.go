// Package integration tests Lifeline's API against a real kube-apiserver and
// etcd (controller-runtime's envtest, running the binaries hack/cluster builds
// from the pinned modules).
package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/lifeline-k8s/lifeline/hack/binaries"
	"github.com/lifeline-k8s/lifeline/test/testenv"
)

var (
	cfg        *rest.Config
	k8s        client.Client
	scheme     = testenv.Scheme()
	kubeconfig string // cluster-admin kubeconfig, for kubectl
	kubectl    string // path of the pinned kubectl
	repoRoot   string
)

// sharedKubeconfigEnv names, for the fuzzer's workers (this binary, started
// again by go test -fuzz), the kubeconfig of the API server the coordinator
// runs. A worker must not start its own: the coordinator stops a worker
// whenever a minimization runs out of time, which leaves that worker's etcd
// and API server running, and they, holding the worker's pipes, keep the
// coordinator waiting for good (the stall of FuzzPodAdmission on 11-27).
const sharedKubeconfigEnv = "LIFELINE_INTEGRATION_KUBECONFIG"

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration setup:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	// envtest logs its retries of a start through controller-runtime;
	// without a logger set each run printed a stack saying none was. A
	// start that fails for good is returned as an error.
	ctrl.SetLogger(logr.Discard())
	ctx := context.Background()
	var err error
	if repoRoot, err = binaries.RepoRoot(); err != nil {
		return 0, err
	}
	// make test exports KUBEBUILDER_ASSETS; a bare `go test` builds or
	// reuses the same cached binaries.
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		dir, err := binaries.EnvtestAssets(ctx, os.Stderr)
		if err != nil {
			return 0, err
		}
		os.Setenv("KUBEBUILDER_ASSETS", dir)
	}
	if kubectl, err = binaries.Binary(ctx, "kubectl", os.Stderr); err != nil {
		return 0, err
	}
	if path := os.Getenv(sharedKubeconfigEnv); path != "" {
		return joinShared(m, path)
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(repoRoot, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	if cfg, err = env.Start(); err != nil {
		return 0, fmt.Errorf("starting envtest: %w", err)
	}
	defer func() { _ = env.Stop() }()
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return 0, err
	}
	stopConversion, err := serveConversion(ctx, k8s)
	if err != nil {
		return 0, err
	}
	defer stopConversion()
	admin, err := env.AddUser(envtest.User{Name: "integration-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return 0, err
	}
	data, err := admin.KubeConfig()
	if err != nil {
		return 0, err
	}
	dir, err := os.MkdirTemp("", "lifeline-integration-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, data, 0o600); err != nil {
		return 0, err
	}
	os.Setenv(sharedKubeconfigEnv, kubeconfig)
	return m.Run(), nil
}

// joinShared runs m against the API server the coordinator started.
func joinShared(m *testing.M, path string) (int, error) {
	var err error
	if cfg, err = clientcmd.BuildConfigFromFlags("", path); err != nil {
		return 0, err
	}
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return 0, err
	}
	kubeconfig = path
	return m.Run(), nil
}
