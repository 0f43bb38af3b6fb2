// Command lifeline-manager runs Lifeline's controllers and admission webhooks
// in one process.
package main

import (
	"cmp"
	"crypto/tls"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/lifeline-k8s/lifeline/internal/cachetrim"
	"github.com/lifeline-k8s/lifeline/internal/conversion"
	"github.com/lifeline-k8s/lifeline/internal/leasefence"
	"github.com/lifeline-k8s/lifeline/internal/manager"
	"github.com/lifeline-k8s/lifeline/internal/metricsauth"
	"github.com/lifeline-k8s/lifeline/internal/podadmission"
	"github.com/lifeline-k8s/lifeline/internal/podcache"
	"github.com/lifeline-k8s/lifeline/internal/webhookauth"
	"github.com/lifeline-k8s/lifeline/internal/webhookcerts"
)

// Leader election and events are needed whatever controllers run. The
// lease lives in the manager's namespace; only its own may be read or
// renewed (create cannot be narrowed by name).
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=lifeline-system,resources=leases,verbs=create
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=lifeline-system,resources=leases,resourceNames=lifeline-manager.lifeline.dev,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "lifeline-manager:", err)
		os.Exit(1)
	}
}

type options struct {
	metrics              metricsauth.Options
	healthAddr           string
	pprofAddr            string
	leaderElect          bool
	leaderElectNamespace string
	namespace            string
	leaseDuration        time.Duration
	renewDeadline        time.Duration
	retryPeriod          time.Duration
	webhookPort          int
	webhookHost          string
	webhookService       string
	keepConversion       bool
	webhookURL           string
	certDir              string
	qps                  float64
	burst                int
	certManagement       string
	certs                webhookcerts.Options
	certSecret           string
	webhookAuth          webhookauth.Options
	cacheAllPods         bool
}

func run() error {
	var o options
	o.metrics.BindFlags(flag.CommandLine)
	flag.StringVar(&o.healthAddr, "health-probe-bind-address", ":8081", "Address the /healthz and /readyz endpoints bind to.")
	flag.StringVar(&o.pprofAddr, "pprof-bind-address", "", "Address Go's pprof endpoints (/debug/pprof/) bind to, for profiling memory and CPU; empty (the default) serves none.")
	flag.BoolVar(&o.leaderElect, "leader-elect", true, "Elect a leader so that only one replica reconciles at a time.")
	flag.StringVar(&o.namespace, "namespace", podNamespace(),
		"The manager's own namespace: it holds the leader election lease and is never protected by fail-closed webhooks, so that the manager can always be repaired. Defaults to the pod's namespace, or lifeline-system outside a cluster.")
	flag.StringVar(&o.leaderElectNamespace, "leader-election-namespace", "", "Namespace of the leader election lease; defaults to --namespace.")
	flag.DurationVar(&o.leaseDuration, "leader-election-lease-duration", 15*time.Second, "How long a replica waits, after the leader stopped renewing, before it takes over: the controllers' failover time when a leader dies without handing the lease back.")
	flag.DurationVar(&o.renewDeadline, "leader-election-renew-deadline", 10*time.Second, "How long the leader tries to renew before it stops leading.")
	flag.DurationVar(&o.retryPeriod, "leader-election-retry-period", 2*time.Second, "How often replicas try to take or renew the lease.")
	flag.IntVar(&o.webhookPort, "webhook-port", 9443, "Port the admission webhook server listens on.")
	flag.StringVar(&o.webhookHost, "webhook-host", "", "Address the admission webhook server binds to; empty means all interfaces.")
	flag.StringVar(&o.certDir, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs", "Folder of the webhook serving certificate (tls.crt, tls.key).")
	flag.StringVar(&o.certManagement, "webhook-cert-management", "self",
		"\"self\": generate a CA and serving certificate into --webhook-cert-secret, rotate them before they expire and keep the CA in the webhook configurations' caBundle; \"external\": another tool (e.g. cert-manager) writes --webhook-cert-dir and the caBundle.")
	flag.StringVar(&o.certSecret, "webhook-cert-secret", "lifeline-system/lifeline-webhook-certs", "namespace/name of the Secret holding the self-managed CA and certificate.")
	flag.StringVar(&o.webhookService, "webhook-service", "", "namespace/name of the Service the API server calls the webhooks through; the CRDs' conversion webhook is kept pointing at it. Defaults to <namespace>/lifeline-webhook.")
	flag.BoolVar(&o.keepConversion, "webhook-conversion", true, "Keep the conversion webhook of the CRDs served in two versions pointing at this manager, with its CA; false when another process serves their conversion.")
	flag.StringVar(&o.webhookURL, "webhook-url", "", "Base https URL the API server calls the webhooks at when the manager runs outside the cluster; the CRDs' conversion webhook is kept pointing at <url>/convert. Overrides --webhook-service.")
	flag.StringVar(&o.certs.DNSName, "webhook-dns-name", "lifeline-webhook.lifeline-system.svc", "DNS name the API server reaches the webhook server by; the serving certificate is issued for it.")
	flag.StringVar(&o.certs.MutatingConfiguration, "webhook-mutating-configuration", "lifeline-mutating-webhooks", "MutatingWebhookConfiguration whose caBundle is kept up to date.")
	flag.StringVar(&o.certs.ValidatingConfiguration, "webhook-validating-configuration", "lifeline-validating-webhooks", "ValidatingWebhookConfiguration whose caBundle is kept up to date.")
	flag.DurationVar(&o.certs.ServerCertDuration, "webhook-cert-validity", 0, "How long a self-managed serving certificate is valid; 0 means a year (its CA is valid for ten).")
	flag.DurationVar(&o.certs.Lookahead, "webhook-cert-lookahead", 0, "A self-managed certificate is renewed once it expires within this; 0 means 90 days.")
	flag.DurationVar(&o.certs.CheckEvery, "webhook-cert-check-interval", 0, "How often the self-managed certificate's expiry is checked; 0 means every 12 hours.")
	o.webhookAuth.BindFlags(flag.CommandLine)
	flag.Float64Var(&o.qps, "kube-api-qps", 20, "Client QPS towards the API server.")
	flag.IntVar(&o.burst, "kube-api-burst", 30, "Client burst towards the API server.")
	flag.BoolVar(&o.cacheAllPods, "cache-all-pods", false, "Cache every pod of the cluster, as before 11-28; by default the manager caches the pods its workloads control and every pod of a namespace holding a Lifeline workload, a PodUnavailableBudget or a PersistentPodState, and nothing else.")
	features := manager.Features()
	manager.BindFlags(features, flag.CommandLine)
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	lifeline, err := manager.New(features)
	if err != nil {
		return err
	}
	lifeline.Namespace = o.namespace
	// No controller or webhook reads managedFields, nor a pod's service
	// account token volume or default tolerations; dropping them before
	// objects enter the cache saves their bytes on every cached pod. Pods
	// no feature looks at stay out of the cache (internal/podcache).
	cacheOpts := cache.Options{DefaultTransform: cachetrim.Transform}
	if !o.cacheAllPods {
		lifeline.PodScope = podcache.ForWorkloads()
		cacheOpts.NewInformer = lifeline.PodScope.NewInformer
	}
	if err := o.conversionEndpoint(&lifeline.Conversion); err != nil {
		return err
	}
	scheme, err := lifeline.Scheme()
	if err != nil {
		return err
	}

	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")

	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = float32(o.qps), o.burst
	id, err := leasefence.Identity()
	if err != nil {
		return err
	}
	// The identity after the name tells the replicas' requests apart in
	// the audit log; managedFields still name the manager lifeline-manager.
	cfg.UserAgent = "lifeline-manager/" + id
	var lock resourcelock.Interface
	if o.leaderElect {
		if lock, err = fenceWrites(cfg, &o, id); err != nil {
			return fmt.Errorf("leader election: %w", err)
		}
	}

	// Metrics are served with the webhook's certificate once it is there,
	// so a scraper given its CA verifies them (the chart's ServiceMonitor).
	o.metrics.ServingCertDir = o.certDir
	clientTLS, err := o.webhookAuth.TLS()
	if err != nil {
		return err
	}
	o.webhookAuth.Open, o.webhookAuth.Limited = []string{conversion.Path}, []string{podadmission.ValidatePath}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Cache:                   cacheOpts,
		Metrics:                 o.metrics.Server(),
		HealthProbeBindAddress:  o.healthAddr,
		PprofBindAddress:        o.pprofAddr,
		LeaderElection:          o.leaderElect,
		LeaderElectionID:        leaseName,
		LeaderElectionNamespace: o.leaseNamespace(),
		// Made here so that every write is fenced by its renewals.
		LeaderElectionResourceLockInterface: lock,
		// Release the lease on shutdown so a restarted or upgraded
		// manager takes over at once instead of after the lease expires.
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &o.leaseDuration,
		RenewDeadline:                 &o.renewDeadline,
		RetryPeriod:                   &o.retryPeriod,
		WebhookServer: webhookauth.New(webhook.NewServer(webhook.Options{
			Host:    o.webhookHost,
			Port:    o.webhookPort,
			CertDir: o.certDir,
			TLSOpts: []func(*tls.Config){func(c *tls.Config) { c.MinVersion = tls.VersionTLS12 }, clientTLS},
		}), o.webhookAuth),
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	// Health endpoints answer from the start, before any controller or
	// webhook is registered, so probes never race start-up; readiness
	// waits for the webhooks.
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	certsReady, err := setupCerts(mgr, &o)
	if err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("webhooks", manager.WebhooksReadyCheck(mgr, certsReady)); err != nil {
		return err
	}

	ctx := ctrl.SetupSignalHandler()
	if err := lifeline.Setup(ctx, mgr); err != nil {
		return fmt.Errorf("registering controllers: %w", err)
	}
	self, err := manager.WhoAmI(ctx, mgr.GetConfig())
	if err != nil {
		return err
	}
	go func() {
		select {
		case <-certsReady:
			log.Info("webhook certificate ready; serving webhooks")
			lifeline.SetupWebhooks(mgr, self)
		case <-ctx.Done():
		}
	}()
	log.Info("starting manager")
	return mgr.Start(ctx)
}

func (o *options) leaseNamespace() string { return cmp.Or(o.leaderElectNamespace, o.namespace) }

// setupCerts arranges the webhook serving certificate and returns a channel
// that closes once it is in place.
func setupCerts(mgr ctrl.Manager, o *options) (<-chan struct{}, error) {
	switch o.certManagement {
	case "external":
		ready := make(chan struct{})
		close(ready)
		return ready, nil
	case "self":
		ns, name, ok := strings.Cut(o.certSecret, "/")
		if !ok {
			return nil, fmt.Errorf("--webhook-cert-secret %q: want namespace/name", o.certSecret)
		}
		o.certs.Secret = types.NamespacedName{Namespace: ns, Name: name}
		o.certs.CertDir = o.certDir
		return webhookcerts.Manage(mgr, o.certs)
	default:
		return nil, fmt.Errorf("--webhook-cert-management %q: want self or external", o.certManagement)
	}
}

// conversionEndpoint says where the CRDs' conversion webhook calls and
// with which CA.
func (o *options) conversionEndpoint(e *conversion.Endpoint) error {
	if !o.keepConversion {
		return nil
	}
	e.CAFile = filepath.Join(o.certDir, "ca.crt")
	e.Every = 10 * time.Second
	if o.webhookURL != "" {
		e.URL = strings.TrimSuffix(o.webhookURL, "/")
		return conversion.ValidURL(e.URL)
	}
	ns, name, ok := strings.Cut(cmp.Or(o.webhookService, o.namespace+"/lifeline-webhook"), "/")
	if !ok || ns == "" || name == "" {
		return fmt.Errorf("--webhook-service %q: want namespace/name", o.webhookService)
	}
	e.Service = &apiextensionsv1.ServiceReference{Namespace: ns, Name: name}
	return nil
}

// podNamespace is the namespace of the pod the manager runs in, from its
// service account, or lifeline-system.
func podNamespace() string {
	data, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil || strings.TrimSpace(string(data)) == "" {
		return "lifeline-system"
	}
	return strings.TrimSpace(string(data))
}
