// Command lifeline-bridge keeps a service registry in step with the pods of
// CloneSets and Advanced StatefulSets through their lifecycle hooks: a pod is registered before it counts
// as available and unregistered before it is updated or deleted. It is
// configured from a file (see internal/bridge.Config).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/lifeline-k8s/lifeline/internal/bridge"
	"github.com/lifeline-k8s/lifeline/internal/cachetrim"
	"github.com/lifeline-k8s/lifeline/internal/leasefence"
	"github.com/lifeline-k8s/lifeline/internal/metricsauth"
	"github.com/lifeline-k8s/lifeline/pkg/hook"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "lifeline-bridge:", err)
		os.Exit(1)
	}
}

func run() error {
	var configPath, healthAddr, leaderNamespace string
	var metrics metricsauth.Options
	var leaderElect bool
	var leaseDuration, renewDeadline, retryPeriod time.Duration
	flag.StringVar(&configPath, "config", "", "The bridge's configuration file (required).")
	metrics.BindFlags(flag.CommandLine)
	flag.StringVar(&healthAddr, "health-probe-bind-address", ":8081", "Address the /healthz and /readyz endpoints bind to.")
	flag.BoolVar(&leaderElect, "leader-elect", true, "Elect a leader so that of several replicas one handles the pods.")
	flag.StringVar(&leaderNamespace, "leader-election-namespace", "", "Namespace of the leader election lease; defaults to the pod's namespace.")
	flag.DurationVar(&leaseDuration, "leader-election-lease-duration", 15*time.Second, "How long a replica waits, after the leader stopped renewing, before it takes over.")
	flag.DurationVar(&renewDeadline, "leader-election-renew-deadline", 10*time.Second, "How long the leader tries to renew before it gives up leading.")
	flag.DurationVar(&retryPeriod, "leader-election-retry-period", 2*time.Second, "How often replicas try to take or renew the lease.")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	if configPath == "" {
		return fmt.Errorf("--config is required")
	}
	cfg, err := bridge.LoadConfig(configPath)
	if err != nil {
		return err
	}
	ctx := ctrl.SetupSignalHandler()
	log := ctrl.Log.WithName("bridge").WithValues("bridge", cfg.Name)
	// The registry first: a bridge that cannot reach it says so and stops,
	// before it takes any pod.
	registry, closeRegistry, err := bridge.NewRegistry(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer closeRegistry()

	// The bridge reads pods' labels, addresses and containers; the
	// manager's transform drops what neither reads.
	cacheOpts := ctrlcache.Options{DefaultTransform: cachetrim.Transform}
	if cfg.Namespace != "" {
		cacheOpts.DefaultNamespaces = map[string]ctrlcache.Config{cfg.Namespace: {}}
	}
	restConfig, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	var lock resourcelock.Interface
	if leaderElect {
		// Fenced as the manager is: a bridge that lost its lease without
		// knowing it writes neither pods nor the registry.
		id, err := leasefence.Identity()
		if err != nil {
			return err
		}
		ns, err := leaseNamespace(leaderNamespace)
		if err != nil {
			return err
		}
		var fence *leasefence.Fence
		if lock, fence, err = leasefence.Fenced(restConfig, ns, "lifeline-bridge-"+cfg.Name, id, renewDeadline); err != nil {
			return err
		}
		registry = bridge.Fenced(registry, fence.Check)
	}
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Cache:                   cacheOpts,
		Metrics:                 metrics.Server(),
		HealthProbeBindAddress:  healthAddr,
		LeaderElection:          leaderElect,
		LeaderElectionID:        "lifeline-bridge-" + cfg.Name,
		LeaderElectionNamespace: leaderNamespace,
		// Made here so that every write is fenced by its renewals.
		LeaderElectionResourceLockInterface: lock,
		// A new leader takes over without waiting for the old lease to
		// run out when the old one stops cleanly.
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &leaseDuration,
		RenewDeadline:                 &renewDeadline,
		RetryPeriod:                   &retryPeriod,
	})
	if err != nil {
		return err
	}
	if err := hook.AddToScheme(mgr.GetScheme()); err != nil {
		return err
	}
	b := &bridge.Bridge{Config: cfg, Registry: registry, Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Log: log}
	if c, ok := registry.(interface{ Changed() <-chan struct{} }); ok {
		b.Changed = c.Changed()
	}
	if err := hook.Add(mgr, b.Handlers(), hook.Options{Name: cfg.Name, Follow: cfg.Follow(), Timeout: cfg.Timeout.Duration}); err != nil {
		return err
	}
	if err := mgr.Add(b); err != nil {
		return err
	}
	if err := pokeOnPodDeletion(ctx, mgr, b); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	log.Info("starting", "config", configPath)
	return mgr.Start(ctx)
}

// pokeOnPodDeletion reconciles the registry when a pod is deleted, so the
// entry of a pod that went without a preDelete hook (evicted, its node
// lost) goes at once rather than at the next resync.
func pokeOnPodDeletion(ctx context.Context, mgr ctrl.Manager, b *bridge.Bridge) error {
	informer, err := mgr.GetCache().GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return err
	}
	_, err = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(any) { b.Poke() }})
	return err
}

// leaseNamespace is the lease's namespace: the flag's, or the pod's own,
// as controller-runtime defaults it.
func leaseNamespace(flagged string) (string, error) {
	if flagged != "" {
		return flagged, nil
	}
	b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return "", fmt.Errorf("--leader-election-namespace is required outside a cluster: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}
