package cluster

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/lifeline-k8s/lifeline/hack/binaries"
)

// RealNodeTaint keeps pods off the real nodes unless they tolerate it: a
// test (or the demo) picks real containers per workload with a toleration
// and a node selector on RealNodeLabel.
var RealNodeTaint = corev1.Taint{Key: "node.lifeline.dev/real", Value: "true", Effect: corev1.TaintEffectNoSchedule}

// RealNodeLabel is set to "true" on every real node.
const RealNodeLabel = "node.lifeline.dev/real"

// RealNodeToleration tolerates RealNodeTaint.
func RealNodeToleration() corev1.Toleration {
	return corev1.Toleration{Key: RealNodeTaint.Key, Operator: corev1.TolerationOpEqual, Value: RealNodeTaint.Value, Effect: RealNodeTaint.Effect}
}

// A realNode is a kubelet with a containerd of its own. Everything either
// writes is under dir, but for what the two put outside any configurable
// root (docs/local-cluster.md lists it), which tearDownRealNode removes.
type realNode struct {
	name string
	dir  string
	// cgroupRoot is the kubelet's cgroup root, one per node, so that two
	// clusters' kubelets on one machine never share kubepods.
	cgroupRoot string
	// ip is the node's InternalIP, its address in net.
	ip  net.IP
	net *nodeNet
}

// RealNodeNames are the cluster's real nodes (Options.RealNodes).
func (c *Cluster) RealNodeNames() []string {
	var names []string
	for _, n := range c.realNodes {
		names = append(names, n.name)
	}
	return names
}

// RealNodeCgroupRoots are the real nodes' kubelet cgroup roots (the same
// path in every hierarchy).
func (c *Cluster) RealNodeCgroupRoots() []string {
	var roots []string
	for _, n := range c.realNodes {
		roots = append(roots, n.cgroupRoot)
	}
	return roots
}

// EventsDir is the folder the real nodes' test containers log their life
// to (testapp's EVENTS_DIR, mounted as a hostPath).
func (c *Cluster) EventsDir() string { return filepath.Join(c.Dir, "events") }

// startRealNodes installs the runtime if the machine lacks it, builds the
// kubelet, the CNI plugin and the test images, and starts each node; it
// returns once every node is Ready with only RealNodeTaint left.
func (c *Cluster) startRealNodes(ctx context.Context, count int) error {
	if count == 0 {
		return nil
	}
	if err := checkPodNetwork(); err != nil {
		return err
	}
	if count > 4 {
		return fmt.Errorf("%d real nodes: the pod network has room for 4", count)
	}
	if err := EnsureRuntime(ctx, c.progress); err != nil {
		return err
	}
	kubelet, err := binaries.Binary(ctx, "kubelet", c.progress)
	if err != nil {
		return err
	}
	c.Binaries["kubelet"] = kubelet
	shared := filepath.Join(c.Dir, "realnodes")
	if err := os.MkdirAll(filepath.Join(shared, "bin"), 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(c.EventsDir(), 0o777); err != nil {
		return err
	}
	if err := os.Chmod(c.EventsDir(), 0o777); err != nil { // the containers run as non-root
		return err
	}
	if err := c.buildCNI(ctx, shared); err != nil {
		return err
	}
	images, err := c.buildTestImages(ctx, shared)
	if err != nil {
		return err
	}
	// The kubelet's client certificate, and the API server's to call it.
	id := clusterID(c.Dir)
	for i := 0; i < count; i++ {
		n := &realNode{name: fmt.Sprintf("real-node-%d", i), dir: filepath.Join(shared, fmt.Sprintf("node-%d", i)),
			cgroupRoot: fmt.Sprintf("/lifeline-%s-%d", id, i)}
		c.realNodes = append(c.realNodes, n)
		if n.net, err = newNodeNet(id, i); err != nil {
			return err
		}
		n.ip = n.net.nodeIP
		if err := n.net.forward(c.apiPort()); err != nil {
			return err
		}
		fmt.Fprintf(c.progress, "starting real node %s (containerd %s, runc, kubelet)\n", n.name, runtimeVersions["containerd"])
		if err := c.startContainerd(ctx, n, shared); err != nil {
			return err
		}
		if err := c.importImages(ctx, n, images); err != nil {
			return err
		}
		if err := c.startKubelet(ctx, n); err != nil {
			return err
		}
	}
	return c.waitRealNodes(ctx)
}

// clusterID names a cluster's cgroups: short, and the same for its folder.
func clusterID(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return hex.EncodeToString(sum[:4])
}

// RealNodeNetworks are the real nodes' network namespaces (their files)
// and the machine's ends of their veth pairs.
func (c *Cluster) RealNodeNetworks() (namespaces, links []string) {
	for _, n := range c.realNodes {
		namespaces = append(namespaces, n.net.path())
		links = append(links, n.net.hostIf)
	}
	return namespaces, links
}

// ExposeToRealNodes makes a loopback port of the machine (a registry a
// test runs) reachable on the same loopback port inside every real node,
// for host-network pods there.
func (c *Cluster) ExposeToRealNodes(port int) error {
	for _, n := range c.realNodes {
		if err := n.net.forward(port); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) apiPort() int {
	u, _ := url.Parse(c.server)
	port, _ := strconv.Atoi(u.Port())
	return port
}

// RealNodeIP is a real node's InternalIP (nil for another name).
func (c *Cluster) RealNodeIP(name string) net.IP {
	for _, n := range c.realNodes {
		if n.name == name {
			return n.ip
		}
	}
	return nil
}

func (c *Cluster) startKubelet(ctx context.Context, n *realNode) error {
	kubeconfig, err := c.writeKubeconfig("kubelet-"+n.name, pkix.Name{CommonName: "system:node:" + n.name, Organization: []string{"system:nodes"}})
	if err != nil {
		return err
	}
	cert, key, err := c.ca.issue("kubelet-serving-"+n.name, pkix.Name{CommonName: n.name}, x509.ExtKeyUsageServerAuth,
		[]string{n.name}, []net.IP{n.ip})
	if err != nil {
		return err
	}
	if err := makeCgroupRoot(n.cgroupRoot); err != nil {
		return err
	}
	ports, err := FreePorts(1) // restarted on its own port, like etcd
	if err != nil {
		return err
	}
	config := filepath.Join(n.dir, "kubelet.yaml")
	if err := os.WriteFile(config, []byte(kubeletConfig(n, ports[0], c.ca.caFile(), cert, key)), 0o644); err != nil {
		return err
	}
	unlock, err := binaries.LockFile(kubeletStartLock, io.Discard, "")
	if err != nil {
		return err
	}
	defer unlock()
	if err := c.startInNode(n, "kubelet-"+n.name, c.Binaries["kubelet"],
		"--config="+config,
		"--kubeconfig="+kubeconfig,
		"--hostname-override="+n.name,
		"--root-dir="+filepath.Join(n.shortDir(), "kubelet"),
		// No zone: a topology spread over zones must not count a zone
		// whose only node no pod of it tolerates.
		"--node-labels="+strings.Join([]string{RealNodeLabel + "=true", "type=real"}, ","),
		// The local cluster is the node's cloud provider: it sets the
		// node's address (setNodeAddress) and lifts the uninitialized
		// taint, and the kubelet then keeps that address. Without an
		// external provider the kubelet takes the address of the
		// default route's interface, the machine's own network.
		"--cloud-provider=external",
		"--v=1",
	); err != nil {
		return err
	}
	pid := c.PID("kubelet-" + n.name)
	return c.poll(ctx, "kubelet of "+n.name+" listening on "+devicePluginSocket, time.Minute, func(context.Context) (bool, error) {
		table, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/unix", pid))
		return err == nil && listsUnixSocket(table, devicePluginSocket), nil
	})
}

// devicePluginSocket is the kubelet's device-plugin registration socket,
// one path on a machine whatever --root-dir says. A starting kubelet
// removes the sockets in its folder and then binds its own, so two kubelets
// starting at once (two clusters' nodes: test packages run in parallel)
// race, and the one that binds second exits with "address already in
// use" (CI of 11-28). Starts hold kubeletStartLock, machine-wide, until the
// kubelet has bound it; the one before loses its socket's path, which
// costs nothing here: no node runs device plugins.
const (
	devicePluginSocket = devicePluginDir + "/kubelet.sock"
	kubeletStartLock   = "/run/lifeline-kubelet-start.lock"
)

// listsUnixSocket says whether a /proc/<pid>/net/unix table (the sockets
// of the process's network namespace: a real node has its own) has a
// socket bound to path, the table's last column.
func listsUnixSocket(table []byte, path string) bool {
	for _, line := range strings.Split(string(table), "\n")[1:] {
		fields := strings.Fields(line)
		if len(fields) == 8 && fields[7] == path {
			return true
		}
	}
	return false
}

// kubeletConfig is the kubelet's configuration: cgroup v1 with cgroupfs
// (this machine's layout), its own cgroup root, a client CA for the API
// server's calls (logs, exec), no read-only port, and eviction and image
// garbage collection that do not fire on a shared disk that is mostly full.
func kubeletConfig(n *realNode, port int, clientCA, cert, key string) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
port: %d
healthzPort: 0
readOnlyPort: 0
failCgroupV1: false
failSwapOn: false
cgroupDriver: cgroupfs
cgroupRoot: %s
containerRuntimeEndpoint: unix://%s
podLogsDir: %s
tlsCertFile: %s
tlsPrivateKeyFile: %s
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %s}
authorization:
  mode: Webhook
evictionHard:
  memory.available: "100Mi"
  nodefs.available: "1%%"
  nodefs.inodesFree: "1%%"
  imagefs.available: "1%%"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
registerWithTaints:
- {key: %s, value: %q, effect: %s}
resolvConf: ""
hairpinMode: none
serializeImagePulls: false
maxPods: 60
nodeStatusReportFrequency: 1m
`, n.ip, port, n.cgroupRoot, n.socket(), filepath.Join(n.dir, "pod-logs"), cert, key, clientCA,
		RealNodeTaint.Key, RealNodeTaint.Value, RealNodeTaint.Effect)
}

// waitRealNodes plays the cloud controller for each registered real node
// (its address, then the uninitialized taint lifted) and waits until every
// one is Ready with only RealNodeTaint left.
func (c *Cluster) waitRealNodes(ctx context.Context) error {
	client, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	return c.poll(ctx, "real nodes Ready", 3*time.Minute, func(ctx context.Context) (bool, error) {
		ready := 0
		for _, n := range c.realNodes {
			node, err := client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			if !hasAddress(node, n.ip) {
				if err := setNodeAddress(ctx, client, node, n.ip); err != nil {
					return false, nil
				}
				continue
			}
			if hasTaint(node, cloudUninitializedTaint) {
				if err := initializeNode(ctx, client, node); err != nil {
					return false, nil
				}
				continue
			}
			if nodeReady(node) && onlyRealNodeTaint(node) {
				ready++
			}
		}
		return ready == len(c.realNodes), nil
	})
}

// cloudUninitializedTaint is what a kubelet with an external cloud
// provider registers with, until the provider has initialized the node.
const cloudUninitializedTaint = "node.cloudprovider.kubernetes.io/uninitialized"

func hasAddress(node *corev1.Node, ip net.IP) bool {
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP && a.Address == ip.String() {
			return true
		}
	}
	return false
}

func hasTaint(node *corev1.Node, key string) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

// setNodeAddress gives a node its loopback InternalIP, as a cloud
// controller would its machine's (the kubelet refuses a loopback
// --node-ip).
func setNodeAddress(ctx context.Context, client kubernetes.Interface, node *corev1.Node, ip net.IP) error {
	patch := fmt.Sprintf(`{"status":{"addresses":[{"type":"InternalIP","address":%q},{"type":"Hostname","address":%q}]}}`, ip, node.Name)
	_, err := client.CoreV1().Nodes().Patch(ctx, node.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
	return err
}

// initializeNode lifts the uninitialized taint, conditional on the taints
// read (a JSON patch test), as a cloud controller does once it set the
// node up.
func initializeNode(ctx context.Context, client kubernetes.Interface, node *corev1.Node) error {
	var kept []corev1.Taint
	for _, t := range node.Spec.Taints {
		if t.Key != cloudUninitializedTaint {
			kept = append(kept, t)
		}
	}
	old, err := json.Marshal(node.Spec.Taints)
	if err != nil {
		return err
	}
	taints, err := json.Marshal(kept)
	if err != nil {
		return err
	}
	patch := fmt.Sprintf(`[{"op":"test","path":"/spec/taints","value":%s},{"op":"replace","path":"/spec/taints","value":%s}]`, old, taints)
	_, err = client.CoreV1().Nodes().Patch(ctx, node.Name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

func onlyRealNodeTaint(node *corev1.Node) bool {
	for _, t := range node.Spec.Taints {
		if t.Key != RealNodeTaint.Key {
			return false
		}
	}
	return true
}
