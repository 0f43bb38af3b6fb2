package cluster

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"embed"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lifeline-k8s/lifeline/hack/binaries"
)

// StageFiles are the kwok stages that make simulated nodes behave like a
// kubelet; docs/local-cluster.md says what they do.
//
//go:embed stages/*.yaml
var StageFiles embed.FS

// Options configure a local cluster.
type Options struct {
	// Dir holds everything the cluster writes: certificates, kubeconfigs,
	// etcd's data and each component's log under logs/. Required.
	Dir string
	// Nodes is the number of simulated nodes; 3 when zero.
	Nodes int
	// Zones are spread over the nodes round-robin as
	// topology.kubernetes.io/zone; zone-a, zone-b and zone-c when empty.
	Zones []string
	// ControllerQPS is the client QPS of kube-controller-manager (burst is
	// 1.5 times it); its default of 20 when zero. Benchmarks set Lifeline's
	// manager to the same value.
	ControllerQPS int
	// AuditLog, if set, is where the API server writes one JSON line per
	// request (metadata only), e.g. to count a controller's requests.
	AuditLog string
	// APIServerProfiling serves the API server's /debug/pprof (make
	// bench -apiserver-profiles); off otherwise, as in hardened clusters.
	APIServerProfiling bool
	// Progress receives a line per step; nil discards them.
	Progress io.Writer
	// FeatureGates, if set, is passed to kube-apiserver and
	// kube-controller-manager as --feature-gates.
	FeatureGates string
	// Profile is how long the simulated kubelets take; Instant when empty.
	Profile Profile
	// RealNodes is the number of real nodes beside the simulated ones: a
	// kubelet and a containerd each, running containers (see realnode.go).
	// They carry RealNodeTaint, so only pods that tolerate it run there.
	RealNodes int
}

// Cluster is a running local control plane with simulated nodes.
type Cluster struct {
	// Dir is Options.Dir.
	Dir string
	// Kubeconfig is the path of a cluster-admin kubeconfig.
	Kubeconfig string
	// Config is a cluster-admin client configuration.
	Config *rest.Config
	// Binaries maps each binary name to its path.
	Binaries map[string]string
	// profile is kwok's (UseProfile).
	profile Profile
	// NodeNames are the simulated nodes.
	NodeNames []string
	// realNodes are the real ones (RealNodeNames).
	realNodes []*realNode
	stopErrs  []error
	// EtcdURL is where the cluster's etcd serves clients, for a watch
	// of every write that needs no API server.
	EtcdURL string

	ca     *authority
	server string
	// procsMu guards procs and supervised: tests that run in parallel
	// start, stop and watch components of one cluster at once.
	procsMu sync.Mutex
	procs   []*process
	// supervised are the components whose exit Exited ignores.
	supervised map[string]bool
	progress   io.Writer
	kcmArgs    []string

	// scraper reads the components' metrics (Scraper), made once.
	scraperMu                           sync.Mutex
	scraper                             *Scraper
	webhookClientCert, webhookClientKey string
}

// Server is the API server's URL.
func (c *Cluster) Server() string { return c.server }

// Start builds what is missing, starts etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and kwok on loopback, registers the
// simulated nodes, and returns once the nodes are Ready and schedulable and
// the default service account exists. On error everything started is stopped.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	if opts.Dir == "" {
		return nil, errors.New("cluster: Options.Dir is required")
	}
	if opts.Nodes == 0 {
		opts.Nodes = 3
	}
	if len(opts.Zones) == 0 {
		opts.Zones = []string{"zone-a", "zone-b", "zone-c"}
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	for _, sub := range []string{"pki", "logs", "etcd"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, err
		}
	}
	var (
		extra []string
		bins  map[string]string
		g     errgroup.Group
	)
	if opts.RealNodes > 0 {
		extra = append(extra, "kubelet") // built with the control plane's binaries, in one go build
		// The runtime's packages download and install while the binaries
		// compile: the one waits on the network and dpkg, the other on CPU.
		g.Go(func() error { return EnsureRuntime(ctx, opts.Progress) })
	}
	g.Go(func() (err error) {
		bins, err = binaries.Binaries(ctx, opts.Progress, extra...)
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, Binaries: bins, progress: opts.Progress}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	if err := c.startControlPlane(ctx, opts); err != nil {
		return nil, err
	}
	if err := c.startNodes(ctx, opts); err != nil {
		return nil, err
	}
	if err := c.startRealNodes(ctx, opts.RealNodes); err != nil {
		return nil, err
	}
	if err := c.createDefaultStorageClass(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// DefaultStorageClass is the local cluster's default StorageClass: claims
// that name no class are provisioned by kube-controller-manager's hostPath
// provisioner and bound at once.
const DefaultStorageClass = "standard"

func (c *Cluster) createDefaultStorageClass(ctx context.Context) error {
	client, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	immediate, deleteClaims := storagev1.VolumeBindingImmediate, corev1.PersistentVolumeReclaimDelete
	sc := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: DefaultStorageClass, Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
		Provisioner:       "kubernetes.io/host-path",
		ReclaimPolicy:     &deleteClaims,
		VolumeBindingMode: &immediate,
	}
	if _, err := client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the default StorageClass: %w", err)
	}
	return nil
}

func (c *Cluster) startControlPlane(ctx context.Context, opts Options) error {
	pki := filepath.Join(c.Dir, "pki")
	ca, err := newAuthority(pki)
	if err != nil {
		return err
	}
	c.ca = ca
	loopback := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")}
	servingCert, servingKey, err := ca.issue("apiserver", pkix.Name{CommonName: "kube-apiserver"}, x509.ExtKeyUsageServerAuth,
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}, loopback)
	if err != nil {
		return err
	}
	// The API server's client certificate towards the kubelets (logs,
	// exec, port-forward), which authorize it through the API server.
	kubeletClientCert, kubeletClientKey, err := ca.issue("apiserver-kubelet-client",
		pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}}, x509.ExtKeyUsageClientAuth, nil, nil)
	if err != nil {
		return err
	}
	admissionConfig, err := c.webhookClientConfig(ca, pki)
	if err != nil {
		return err
	}
	saKey, saPub, err := writeServiceAccountKey(pki)
	if err != nil {
		return err
	}
	ports, err := FreePorts(3)
	if err != nil {
		return err
	}
	etcdPort, peerPort, apiPort := ports[0], ports[1], ports[2]
	c.server = fmt.Sprintf("https://127.0.0.1:%d", apiPort)

	fmt.Fprintln(c.progress, "starting etcd")
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	c.EtcdURL = etcdURL
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	if err := c.run("etcd",
		"--name=default",
		"--data-dir="+filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL,
		"--listen-metrics-urls=",
		"--unsafe-no-fsync", // a throwaway cluster; durability only costs time
		"--quota-backend-bytes=8589934592",
	); err != nil {
		return err
	}
	if err := c.waitHTTP(ctx, "etcd", etcdURL+"/health"); err != nil {
		return err
	}

	fmt.Fprintln(c.progress, "starting kube-apiserver")
	var auditArgs []string
	if opts.AuditLog != "" {
		policy := filepath.Join(c.Dir, "audit-policy.yaml")
		const metadataOnly = "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n"
		if err := os.WriteFile(policy, []byte(metadataOnly), 0o644); err != nil {
			return err
		}
		auditArgs = []string{"--audit-policy-file=" + policy, "--audit-log-path=" + opts.AuditLog,
			"--audit-log-format=json", "--audit-log-mode=blocking", "--audit-log-maxsize=0"}
	}
	// The API server's garbage collector ran about every 170 MB allocated
	// (GOGC=100 over a heap of ~200 MB live) and took 13% of its CPU in
	// e2e (profiled 11-29); the API server is a third of make test's CPU.
	// A heap four times its live size costs some hundreds of MB per
	// cluster and leaves the collector a quarter of the cycles.
	if err := c.StartProcessEnv("kube-apiserver", c.Binaries["kube-apiserver"], []string{"GOGC=400"}, append([]string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(apiPort),
		"--cert-dir=" + pki,
		"--tls-cert-file=" + servingCert, "--tls-private-key-file=" + servingKey,
		"--client-ca-file=" + ca.caFile(),
		"--kubelet-client-certificate=" + kubeletClientCert, "--kubelet-client-key=" + kubeletClientKey,
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		// Webhooks and conversions behind a Service are called at its
		// endpoints' addresses: the cluster has no kube-proxy to route a
		// ClusterIP (the chart's Service, on real nodes).
		"--enable-aggregator-routing=true",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + saPub,
		"--service-account-signing-key-file=" + saKey,
		"--service-cluster-ip-range=10.96.0.0/16",
		"--authorization-mode=Node,RBAC",
		// As hardened clusters (OpenShift among them) run: a controller
		// may set blockOwnerDeletion on an owner reference only with
		// update on the owner's finalizers, so the local cluster proves
		// Lifeline's roles grant what such clusters ask.
		"--enable-admission-plugins=OwnerReferencesPermissionEnforcement",
		// The API server presents a client certificate to webhooks, which
		// Lifeline's manager requires (WebhookClientName).
		"--admission-control-config-file=" + admissionConfig,
		"--allow-privileged=true",
		"--profiling=" + strconv.FormatBool(opts.APIServerProfiling),
	}, append(auditArgs, featureGates(opts)...)...)...); err != nil {
		return err
	}
	admin, err := c.writeKubeconfig("admin", pkix.Name{CommonName: "lifeline-admin", Organization: []string{"system:masters"}})
	if err != nil {
		return err
	}
	c.Kubeconfig = admin
	c.Config, err = clientcmd.BuildConfigFromFlags("", admin)
	if err != nil {
		return err
	}
	if err := c.waitAPIServer(ctx); err != nil {
		return err
	}

	fmt.Fprintln(c.progress, "starting kube-controller-manager and kube-scheduler")
	kcm, err := c.writeKubeconfig("kube-controller-manager", pkix.Name{CommonName: "system:kube-controller-manager"})
	if err != nil {
		return err
	}
	kcmArgs := []string{
		"--kubeconfig=" + kcm,
		"--authentication-kubeconfig=" + kcm,
		"--authorization-kubeconfig=" + kcm,
		"--bind-address=127.0.0.1", "--secure-port=0",
		"--leader-elect=false",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + saKey,
		"--root-ca-file=" + ca.caFile(),
		"--cluster-signing-cert-file=" + ca.caFile(),
		"--cluster-signing-key-file=" + filepath.Join(pki, "ca.key"),
		"--profiling=false",
		// Dynamic provisioning for the default StorageClass: hostPath
		// volumes under /tmp/hostpath_pv, made and removed by
		// kube-controller-manager itself (a provisioner meant for test
		// clusters; kwok's pods never write to them).
		"--enable-hostpath-provisioner=true",
	}
	if opts.ControllerQPS > 0 {
		kcmArgs = append(kcmArgs,
			fmt.Sprintf("--kube-api-qps=%d", opts.ControllerQPS),
			fmt.Sprintf("--kube-api-burst=%d", opts.ControllerQPS*3/2))
	}
	kcmArgs = append(kcmArgs, featureGates(opts)...)
	c.kcmArgs = kcmArgs
	if err := c.run("kube-controller-manager", kcmArgs...); err != nil {
		return err
	}
	sched, err := c.writeKubeconfig("kube-scheduler", pkix.Name{CommonName: "system:kube-scheduler"})
	if err != nil {
		return err
	}
	return c.run("kube-scheduler",
		"--kubeconfig="+sched,
		"--authentication-kubeconfig="+sched,
		"--authorization-kubeconfig="+sched,
		"--bind-address=127.0.0.1", "--secure-port=0",
		"--leader-elect=false",
		"--profiling=false",
	)
}

func (c *Cluster) waitAPIServer(ctx context.Context) error {
	client, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	return c.poll(ctx, "kube-apiserver", 2*time.Minute, func(ctx context.Context) (bool, error) {
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", nil
	})
}

func featureGates(opts Options) []string {
	if opts.FeatureGates == "" {
		return nil
	}
	return []string{"--feature-gates=" + opts.FeatureGates}
}
