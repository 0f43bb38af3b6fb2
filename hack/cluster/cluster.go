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
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
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
	// Progress receives a line per step; nil discards them.
	Progress io.Writer
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
	// NodeNames are the simulated nodes.
	NodeNames []string

	ca       *authority
	server   string
	procs    []*process
	progress io.Writer
	kcmArgs  []string
}

type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

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
	bins, err := Binaries(ctx, opts.Progress)
	if err != nil {
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
	if err := c.run("kube-apiserver", append([]string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(apiPort),
		"--cert-dir=" + pki,
		"--tls-cert-file=" + servingCert, "--tls-private-key-file=" + servingKey,
		"--client-ca-file=" + ca.caFile(),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + saPub,
		"--service-account-signing-key-file=" + saKey,
		"--service-cluster-ip-range=10.96.0.0/16",
		"--authorization-mode=Node,RBAC",
		"--allow-privileged=true",
		"--profiling=false",
	}, auditArgs...)...); err != nil {
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

func (c *Cluster) startNodes(ctx context.Context, opts Options) error {
	kwokConfig, err := c.writeKwokConfig()
	if err != nil {
		return err
	}
	kwokKubeconfig, err := c.writeKubeconfig("kwok", pkix.Name{CommonName: "kwok", Organization: []string{"system:masters"}})
	if err != nil {
		return err
	}
	ports, err := FreePorts(1)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.progress, "starting kwok with %d nodes\n", opts.Nodes)
	if err := c.run("kwok",
		"--kubeconfig="+kwokKubeconfig,
		"--config="+kwokConfig,
		"--manage-all-nodes=true",
		// Leases keep nodes Ready without a status write every few
		// seconds; without them nodes flap NotReady.
		"--node-lease-duration-seconds=40",
		"--server-address="+fmt.Sprintf("127.0.0.1:%d", ports[0]),
		"--node-ip=127.0.0.1",
		"--cidr=10.244.0.1/16",
	); err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	for i := 0; i < opts.Nodes; i++ {
		name := fmt.Sprintf("kwok-node-%d", i)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				corev1.LabelHostname:     name,
				corev1.LabelOSStable:     "linux",
				corev1.LabelArchStable:   "amd64",
				corev1.LabelTopologyZone: opts.Zones[i%len(opts.Zones)],
				"type":                   "kwok",
				"node.lifeline.dev/fake": "true",
			},
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
		}}
		if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("registering node %s: %w", name, err)
		}
		c.NodeNames = append(c.NodeNames, name)
	}
	// A node is schedulable once kwok reports it Ready and the node
	// lifecycle controller has lifted the not-ready taint that
	// TaintNodesByCondition put on it at registration.
	err = c.poll(ctx, "nodes Ready and untainted", 2*time.Minute, func(ctx context.Context) (bool, error) {
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		ready := 0
		for _, n := range nodes.Items {
			if nodeReady(&n) && len(n.Spec.Taints) == 0 {
				ready++
			}
		}
		return ready >= opts.Nodes, nil
	})
	if err != nil {
		return err
	}
	return WaitForServiceAccount(ctx, client, metav1.NamespaceDefault)
}

// WaitForServiceAccount waits until the service account controller has made
// the default service account of namespace; pods cannot be created before.
func WaitForServiceAccount(ctx context.Context, client kubernetes.Interface, namespace string) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Stop ends every component, newest first, and waits for each to exit.
func (c *Cluster) Stop() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	}
	c.procs = nil
}

// StopProcess ends one component with sig and waits for it to exit; it is
// no longer part of the cluster until started again.
func (c *Cluster) StopProcess(name string, sig syscall.Signal) error {
	for i, p := range c.procs {
		if p.name != name {
			continue
		}
		_ = syscall.Kill(-p.cmd.Process.Pid, sig)
		select {
		case <-p.done:
		case <-time.After(time.Minute):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
		c.procs = append(c.procs[:i], c.procs[i+1:]...)
		return nil
	}
	return fmt.Errorf("no component %s", name)
}

// RestartControllerManager restarts kube-controller-manager with its
// controllers under per-controller service-account credentials (as the
// cluster starts) or all under its own identity
// (system:kube-controller-manager), the two ways a cluster may run it.
func (c *Cluster) RestartControllerManager(serviceAccountCredentials bool) error {
	if err := c.StopProcess("kube-controller-manager", syscall.SIGTERM); err != nil {
		return err
	}
	args := make([]string, 0, len(c.kcmArgs))
	for _, a := range c.kcmArgs {
		if strings.HasPrefix(a, "--use-service-account-credentials=") {
			a = fmt.Sprintf("--use-service-account-credentials=%v", serviceAccountCredentials)
		}
		args = append(args, a)
	}
	return c.run("kube-controller-manager", args...)
}

// Exited reports the first component that has exited, if any: a cluster
// whose component died is broken, and callers should say which one.
func (c *Cluster) Exited() error {
	for _, p := range c.procs {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited: %v (log: %s)", p.name, p.err, c.LogFile(p.name))
		default:
		}
	}
	return nil
}

// LogFile is the path of a component's log.
func (c *Cluster) LogFile(name string) string {
	return filepath.Join(c.Dir, "logs", name+".log")
}

// WriteKubeconfig writes a kubeconfig for a client certificate with the given
// user name and groups, signed by the cluster's CA, and returns its path.
func (c *Cluster) WriteKubeconfig(user string, groups ...string) (string, error) {
	return c.writeKubeconfig(user, pkix.Name{CommonName: user, Organization: groups})
}

func (c *Cluster) run(name string, args ...string) error {
	return c.StartProcess(name, c.Binaries[name], args...)
}

// StartProcess runs a program alongside the cluster, logging to
// LogFile(name); Stop ends it with the cluster's own components, before them.
func (c *Cluster) StartProcess(name, path string, args ...string) error {
	log, err := os.OpenFile(c.LogFile(name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = log, log
	// Each component leads its own process group so Stop can end it with
	// its children; Pdeathsig ends it if this process dies without Stop.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		log.Close()
		close(p.done)
	}()
	c.procs = append(c.procs, p)
	return nil
}

func (c *Cluster) writeKubeconfig(name string, subject pkix.Name) (string, error) {
	certFile, keyFile, err := c.ca.issue("client-"+name, subject, x509.ExtKeyUsageClientAuth, nil, nil)
	if err != nil {
		return "", err
	}
	read := func(p string) []byte { b, _ := os.ReadFile(p); return b }
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["lifeline-dev"] = &clientcmdapi.Cluster{Server: c.server, CertificateAuthorityData: read(c.ca.caFile())}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: read(certFile), ClientKeyData: read(keyFile)}
	cfg.Contexts["lifeline-dev"] = &clientcmdapi.Context{Cluster: "lifeline-dev", AuthInfo: name}
	cfg.CurrentContext = "lifeline-dev"
	path := filepath.Join(c.Dir, name+".kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}

func (c *Cluster) writeKwokConfig() (string, error) {
	entries, err := StageFiles.ReadDir("stages")
	if err != nil {
		return "", err
	}
	var docs []string
	for _, e := range entries {
		data, err := StageFiles.ReadFile("stages/" + e.Name())
		if err != nil {
			return "", err
		}
		docs = append(docs, string(data))
	}
	path := filepath.Join(c.Dir, "kwok-stages.yaml")
	return path, os.WriteFile(path, []byte(strings.Join(docs, "\n---\n")), 0o644)
}

func (c *Cluster) waitHTTP(ctx context.Context, what, url string) error {
	return c.poll(ctx, what, time.Minute, func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
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

// poll waits for cond, failing early, with the component's name, if a
// component exits meanwhile.
func (c *Cluster) poll(ctx context.Context, what string, timeout time.Duration, cond wait.ConditionWithContextFunc) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Exited(); err != nil {
			return false, err
		}
		return cond(ctx)
	})
	if err != nil {
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}

// FreePorts asks the kernel for n distinct free loopback ports.
func FreePorts(n int) ([]int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
