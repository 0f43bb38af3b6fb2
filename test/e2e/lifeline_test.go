package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/lifeline-k8s/lifeline/hack/cluster"
	"github.com/lifeline-k8s/lifeline/internal/manager"
	"github.com/lifeline-k8s/lifeline/internal/webhookcerts"
)

var (
	k8s        ctrlclient.Client
	managerMu  sync.Mutex
	stopLatest func()
	// webhookPort and webhookCertDir are where the in-process manager
	// serves its webhooks, the same across restarts.
	webhookPort    int
	webhookCertDir string
	managerStarts  int
)

// bindingWebhook is the webhook the e2e cluster calls. The CloneSet
// webhooks are tested against the API server in test/integration; here
// the pod binding webhook runs on every bind, as in make dev.
const (
	bindingWebhook        = "mpod.lifeline.dev"
	bindingWebhookConfig  = "lifeline-e2e-mutating"
	webhookCertSecretName = "lifeline-e2e-webhook-certs"
)

// installLifeline installs the CRDs and starts the manager in this process,
// wired exactly as lifeline-manager wires it.
func installLifeline(ctx context.Context) error {
	root, err := cluster.RepoRoot()
	if err != nil {
		return err
	}
	if _, err := envtest.InstallCRDs(local.Config, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(root, "config", "crd", "bases")}, ErrorIfPathMissing: true,
	}); err != nil {
		return err
	}
	// The manager logs to the cluster's log folder, next to the other
	// components; kept when a test fails.
	logFile, err := os.Create(local.LogFile("lifeline-manager"))
	if err != nil {
		return err
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(logFile), zap.Level(zapcore.DebugLevel)))
	testConfig := rest.CopyConfig(local.Config)
	testConfig.QPS, testConfig.Burst = 200, 400 // the tests' own client must not be what is slow
	if k8s, err = ctrlclient.New(testConfig, ctrlclient.Options{Scheme: manager.Scheme()}); err != nil {
		return err
	}
	ports, err := cluster.FreePorts(1)
	if err != nil {
		return err
	}
	webhookPort, webhookCertDir = ports[0], filepath.Join(local.Dir, "webhook-certs")
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "lifeline-system"}}
	if err := k8s.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if _, err := cluster.InstallWebhooks(ctx, local.Config, filepath.Join(root, "config", "webhook", "manifests.yaml"), "localhost", webhookPort,
		cluster.WebhookNames{Mutating: bindingWebhookConfig}, bindingWebhook); err != nil {
		return err
	}
	return startManager()
}

// startManager starts a fresh manager: a new cache, new expectations, as
// after a process restart.
func startManager() error {
	managerMu.Lock()
	defer managerMu.Unlock()
	cfg := rest.CopyConfig(local.Config)
	cfg.QPS, cfg.Burst = 50, 100
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  manager.Scheme(),
		Metrics: metricsserver.Options{BindAddress: "0"},
		// The same controllers register again after each restart.
		Controller:    config.Controller{SkipNameValidation: ptr.To(true)},
		WebhookServer: webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: webhookPort, CertDir: webhookCertDir}),
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	// A short hook-wait warning, so tests can see it.
	// OpenKruise's e2e runs with its alpha gates on, among them
	// RecreatePodWhenChangeVCTInCloneSetGate; so does ours.
	if err := manager.Setup(ctx, mgr, manager.Options{HookWaitWarning: 2 * time.Second, CloneSetRecreateOnVCTChange: true}); err != nil {
		cancel()
		return err
	}
	// The rotator's controller name must be new in this process at each
	// start: it does not take the manager's SkipNameValidation.
	managerStarts++
	certsReady, err := webhookcerts.Manage(mgr, webhookcerts.Options{
		Secret:  types.NamespacedName{Namespace: "lifeline-system", Name: webhookCertSecretName},
		DNSName: "localhost", CertDir: webhookCertDir, MutatingConfiguration: bindingWebhookConfig,
		ControllerName: fmt.Sprintf("e2e-cert-rotator-%d", managerStarts),
	})
	if err != nil {
		cancel()
		return err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		cancel()
		return fmt.Errorf("manager cache never synced")
	}
	select {
	case <-certsReady:
		manager.SetupWebhooks(mgr)
	case <-time.After(time.Minute):
		cancel()
		return fmt.Errorf("webhook certificate never ready")
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return mgr.GetWebhookServer().StartedChecker()(nil) == nil, nil
	}); err != nil {
		cancel()
		return fmt.Errorf("webhook server never started: %w", err)
	}
	stopLatest = func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
		}
	}
	return nil
}

func stopManager() {
	managerMu.Lock()
	defer managerMu.Unlock()
	if stopLatest != nil {
		stopLatest()
		stopLatest = nil
	}
}

// restartManager stops the manager and starts a new one, as a crash and
// restart of lifeline-manager would.
func restartManager() error {
	stopManager()
	return startManager()
}

// counter reads a counter of the in-process metrics registry; counters
// outlive manager restarts, as they would not across processes.
func counter(name string, labels map[string]string) float64 {
	families, err := metrics.Registry.Gather()
	if err != nil {
		return -1
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metric:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
					continue metric
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
