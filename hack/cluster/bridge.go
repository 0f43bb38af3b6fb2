package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Registry is a service registry running next to the cluster.
type Registry struct {
	// Name is the process name, for LogFile, StopProcess and
	// StartRegistryAgain.
	Name string
	// Endpoint is where clients reach it.
	Endpoint string

	binary, health string
	args           []string
}

// StartEtcdRegistry runs an etcd of its own, on loopback, as the service
// registry a bridge keeps in step with the pods: the cluster's pinned etcd
// binary, not the cluster's etcd.
func (c *Cluster) StartEtcdRegistry(ctx context.Context, name string) (*Registry, error) {
	return c.startOnFreePorts(ctx, 2, func(ports []int) *Registry {
		return &Registry{Name: name, Endpoint: fmt.Sprintf("http://127.0.0.1:%d", ports[0]), binary: "etcd", health: EtcdHealth,
			args: EtcdArgs(name, filepath.Join(c.Dir, name), ports[0], ports[1])}
	})
}

// startOnFreePorts starts the registry build makes on n free ports, with
// new ports when another process took one of them between their choice
// and the registry's bind (seen in CI: "address already in use").
func (c *Cluster) startOnFreePorts(ctx context.Context, n int, build func(ports []int) *Registry) (*Registry, error) {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		var ports []int
		if ports, err = FreePorts(n); err != nil {
			return nil, err
		}
		r := build(ports)
		if err = c.StartRegistryAgain(ctx, r); err == nil {
			return r, nil
		}
		log, _ := os.ReadFile(c.LogFile(r.Name))
		if !strings.Contains(string(log), "address already in use") {
			return nil, err
		}
		_ = c.StopProcess(r.Name, syscall.SIGTERM)
		_ = os.Remove(c.LogFile(r.Name))
	}
	return nil, err
}

// EtcdHealth is the path a registry etcd answers 200 on once it serves.
const EtcdHealth = "/health"

// EtcdArgs are the flags of a one-member etcd on loopback, serving clients
// on clientPort, as the registry a bridge keeps in step.
func EtcdArgs(name, dataDir string, clientPort, peerPort int) []string {
	client := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peer := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	return []string{
		"--name=" + name,
		"--data-dir=" + dataDir,
		"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=" + name + "=" + peer,
		"--listen-metrics-urls=",
		"--unsafe-no-fsync",
	}
}

// StartRegistryAgain starts a registry stopped with StopProcess, with its
// data, and waits until it answers.
func (c *Cluster) StartRegistryAgain(ctx context.Context, r *Registry) error {
	bin, err := c.binary(ctx, r.binary)
	if err != nil {
		return err
	}
	if err := c.StartProcess(r.Name, bin, r.args...); err != nil {
		return err
	}
	return c.waitHTTP(ctx, r.Name, r.Endpoint+r.health)
}

// StartConsulRegistry runs a Consul agent in dev mode (one in-memory
// server) on loopback ports of its own, as the HTTP service registry a
// bridge keeps in step with the pods. It never phones home (no update
// check) and serves neither DNS nor gRPC.
func (c *Cluster) StartConsulRegistry(ctx context.Context, name string) (*Registry, error) {
	return c.startOnFreePorts(ctx, 4, func(ports []int) *Registry {
		return &Registry{Name: name, Endpoint: fmt.Sprintf("http://127.0.0.1:%d", ports[0]), binary: "consul", health: ConsulHealth,
			args: ConsulArgs(name, [4]int(ports))}
	})
}

// ConsulHealth is the path a Consul agent answers 200 on once it has a
// leader.
const ConsulHealth = "/v1/status/leader"

// ConsulArgs are the flags of a Consul agent in dev mode (one in-memory
// server) on loopback: HTTP on ports[0], then its server, serf LAN and
// serf WAN ports. It never phones home and serves neither DNS nor gRPC.
func ConsulArgs(name string, ports [4]int) []string {
	return []string{
		"agent", "-dev", "-node=" + name,
		"-bind=127.0.0.1", "-client=127.0.0.1", "-advertise=127.0.0.1",
		fmt.Sprintf("-http-port=%d", ports[0]), fmt.Sprintf("-server-port=%d", ports[1]),
		fmt.Sprintf("-serf-lan-port=%d", ports[2]), fmt.Sprintf("-serf-wan-port=%d", ports[3]),
		"-dns-port=-1", "-grpc-port=-1", "-grpc-tls-port=-1",
		"-hcl=disable_update_check = true",
		"-log-level=warn",
	}
}

// BridgeOptions say how to run lifeline-bridge next to the cluster.
type BridgeOptions struct {
	// Root is the repository to build the bridge from; Dir holds the
	// binary.
	Root, Dir string
	// Config is the path of the bridge's configuration file.
	Config string
	// Name is the process name (default lifeline-bridge), so that two
	// bridges can run side by side.
	Name string
	// Bin runs this binary (one unpacked from the image) instead of
	// building it.
	Bin string
}

// Bridge is a running lifeline-bridge.
type Bridge struct {
	Name       string
	MetricsURL string

	bin, readyz string
	args        []string
}

// StartBridge builds lifeline-bridge and runs it as it would run in a
// cluster: under its own identity (user lifeline-bridge) bound by the
// generated ClusterRole config/bridge, with leader election. It returns
// once the bridge is ready.
func (c *Cluster) StartBridge(ctx context.Context, o BridgeOptions) (*Bridge, error) {
	bin := o.Bin
	if bin == "" {
		bin = filepath.Join(o.Dir, "bin", "lifeline-bridge")
		if err := goBuild(ctx, o.Root, bin, "./cmd/lifeline-bridge"); err != nil {
			return nil, err
		}
	}
	kubeconfig, err := c.hookOperatorIdentity(ctx, o.Root, "lifeline-bridge")
	if err != nil {
		return nil, err
	}
	ports, err := FreePorts(2)
	if err != nil {
		return nil, err
	}
	name := o.Name
	if name == "" {
		name = "lifeline-bridge"
	}
	b := &Bridge{Name: name, MetricsURL: fmt.Sprintf("https://127.0.0.1:%d/metrics", ports[0]), bin: bin,
		readyz: fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[1]),
		args: []string{
			"--kubeconfig=" + kubeconfig,
			"--config=" + o.Config,
			fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", ports[0]),
			fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", ports[1]),
			"--leader-election-namespace=lifeline-system",
			"--zap-log-level=debug",
			// A killed bridge's successor takes over in seconds, not 15.
			"--leader-election-lease-duration=4s", "--leader-election-renew-deadline=3s", "--leader-election-retry-period=1s",
		}}
	return b, c.StartBridgeAgain(ctx, b)
}

// StartBridgeAgain starts a bridge stopped with StopProcess: the same
// binary and flags, a fresh process.
func (c *Cluster) StartBridgeAgain(ctx context.Context, b *Bridge) error {
	if err := c.StartProcess(b.Name, b.bin, b.args...); err != nil {
		return err
	}
	return c.waitReady(ctx, &Lifeline{Name: b.Name, readyz: b.readyz})
}

// RestartBridge stops the bridge with sig and starts it again.
func (c *Cluster) RestartBridge(ctx context.Context, b *Bridge, sig syscall.Signal) error {
	if err := c.StopProcess(b.Name, sig); err != nil {
		return err
	}
	return c.StartBridgeAgain(ctx, b)
}

// HookOperatorsGroup is the group whose members the admission policies
// (config/rbac/policy.yaml and config/bridge/policy.yaml) narrow to
// releasing hooks.
const HookOperatorsGroup = "lifeline.dev:hook-operators"

// hookOperatorIdentity applies the generated roles every hook operator
// needs and its admission policies (config/bridge, and the policy of
// Lifeline's identities, config/rbac/policy.yaml) and returns a kubeconfig
// for user, in HookOperatorsGroup, bound to them.
func (c *Cluster) hookOperatorIdentity(ctx context.Context, root, user string) (string, error) {
	return c.operatorIdentity(ctx, root, user, HookOperatorsGroup)
}

// operatorIdentity is hookOperatorIdentity with the user's groups: none
// leaves it outside the policy (an OpenKruise-style operator that writes
// labels of its own besides the hooks').
func (c *Cluster) operatorIdentity(ctx context.Context, root, user string, groups ...string) (string, error) {
	client, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return "", err
	}
	// The lease's Role lives there, Lifeline installed or not (OpenKruise's
	// cluster in the migration tests).
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ManagerNamespace}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	if err := c.ApplyFiles(ctx, filepath.Join(root, "config", "bridge"), filepath.Join(root, "config", "rbac", "policy.yaml")); err != nil {
		return "", fmt.Errorf("applying the hook operators' RBAC and policy: %w", err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user + "-local"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "lifeline-bridge"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	lease := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ManagerNamespace, Name: user + "-local"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "lifeline-bridge"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := client.RbacV1().RoleBindings(ManagerNamespace).Create(ctx, lease, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	return c.WriteKubeconfig(user, groups...)
}

// StartHookOperator builds a hook operator program of the repository (an
// example, say) and runs it under its own identity, name, bound to the
// roles every hook operator needs, with args after --kubeconfig. A
// restricted one is a hook operator under the policy (built on pkg/hook);
// one that is not writes labels of its own besides the hooks' (seed 001's
// operator as written).
func (c *Cluster) StartHookOperator(ctx context.Context, root, dir, name, pkg string, restricted bool, args ...string) error {
	bin := filepath.Join(dir, "bin", name)
	if err := goBuild(ctx, root, bin, pkg); err != nil {
		return err
	}
	var groups []string
	if restricted {
		groups = append(groups, HookOperatorsGroup)
	}
	kubeconfig, err := c.operatorIdentity(ctx, root, name, groups...)
	if err != nil {
		return err
	}
	return c.StartProcess(name, bin, append([]string{"--kubeconfig=" + kubeconfig}, args...)...)
}

// HookOperatorKubeconfig is a kubeconfig for user as a hook operator: in
// HookOperatorsGroup, bound to the generated roles, under the policy.
func (c *Cluster) HookOperatorKubeconfig(ctx context.Context, root, user string) (string, error) {
	return c.hookOperatorIdentity(ctx, root, user)
}
