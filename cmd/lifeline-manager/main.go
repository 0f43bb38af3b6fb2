// Command lifeline-manager runs Lifeline's controllers and admission webhooks
// in one process.
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"os"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/lifeline-k8s/lifeline/internal/manager"
)

// Leader election and events are needed whatever controllers run.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "lifeline-manager:", err)
		os.Exit(1)
	}
}

type options struct {
	metricsAddr          string
	healthAddr           string
	leaderElect          bool
	leaderElectNamespace string
	webhookPort          int
	webhookHost          string
	certDir              string
	qps                  float64
	burst                int
	controllers          manager.Options
}

func run() error {
	var o options
	flag.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "Address the Prometheus metrics endpoint binds to; \"0\" disables it.")
	flag.StringVar(&o.healthAddr, "health-probe-bind-address", ":8081", "Address the /healthz and /readyz endpoints bind to.")
	flag.BoolVar(&o.leaderElect, "leader-elect", true, "Elect a leader so that only one replica reconciles at a time.")
	flag.StringVar(&o.leaderElectNamespace, "leader-election-namespace", "", "Namespace of the leader election lease; defaults to the pod's namespace.")
	flag.IntVar(&o.webhookPort, "webhook-port", 9443, "Port the admission webhook server listens on.")
	flag.StringVar(&o.webhookHost, "webhook-host", "", "Address the admission webhook server binds to; empty means all interfaces.")
	flag.StringVar(&o.certDir, "webhook-cert-dir", "", "Folder of the webhook serving certificate (tls.crt, tls.key); empty means the controller-runtime default.")
	flag.Float64Var(&o.qps, "kube-api-qps", 20, "Client QPS towards the API server.")
	flag.IntVar(&o.burst, "kube-api-burst", 30, "Client burst towards the API server.")
	flag.IntVar(&o.controllers.CloneSetWorkers, "cloneset-workers", 3, "How many CloneSets reconcile at once.")
	flag.DurationVar(&o.controllers.ExpectationTimeout, "expectation-timeout", 5*time.Minute, "How long a write the cache never shows may hold a CloneSet back.")
	flag.BoolVar(&o.controllers.CloneSetExcludePreparingDelete, "cloneset-scaling-exclude-preparing-delete", false,
		"Leave PreparingDelete pods out of every CloneSet's replica count, so scaling up creates new pods instead of reviving them.")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()

	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")

	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = float32(o.qps), o.burst
	cfg.UserAgent = "lifeline-manager"

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  manager.Scheme(),
		Metrics:                 metricsserver.Options{BindAddress: o.metricsAddr},
		HealthProbeBindAddress:  o.healthAddr,
		LeaderElection:          o.leaderElect,
		LeaderElectionID:        "lifeline-manager.lifeline.dev",
		LeaderElectionNamespace: o.leaderElectNamespace,
		// Release the lease on shutdown so a restarted or upgraded
		// manager takes over at once instead of after the lease expires.
		LeaderElectionReleaseOnCancel: true,
		WebhookServer: webhook.NewServer(webhook.Options{
			Host:    o.webhookHost,
			Port:    o.webhookPort,
			CertDir: o.certDir,
			TLSOpts: []func(*tls.Config){func(c *tls.Config) { c.MinVersion = tls.VersionTLS12 }},
		}),
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	// Health endpoints answer from the start, before any controller or
	// webhook is registered, so probes never race start-up.
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}

	ctx := ctrl.SetupSignalHandler()
	if err := manager.Setup(ctx, mgr, o.controllers); err != nil {
		return fmt.Errorf("registering controllers: %w", err)
	}
	log.Info("starting manager")
	return mgr.Start(ctx)
}
