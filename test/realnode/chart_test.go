package realnode

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/lifeline-k8s/lifeline/hack/cluster"
	"github.com/lifeline-k8s/lifeline/test/testenv"
)

const chartNamespace = "lifeline-system"

// TestChartOnRealNodes installs charts/lifeline with helm, as a user
// would, on a cluster whose real nodes hold the images make images builds
// (loaded into their runtime, no registry). The manager's two replicas and
// the bridge run as pods on real nodes, on the host's network (the pod
// network there reaches nothing, as on a cluster without kube-proxy), as
// non-root with a read-only root filesystem (read from their processes);
// the API server calls their webhooks through the chart's Service; the
// seed scenario runs under them; killing the leader's container hands the
// controllers over; helm upgrade rolls the replicas and keeps the
// certificate; helm uninstall leaves the CRDs and the workloads.
func TestChartOnRealNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	ctx := context.Background()
	cc := startChartCluster(t, 100)
	c, client, helm, kubectl := cc.Cluster, cc.client, cc.helm, cc.Binaries["kubectl"]
	run := func(what string, name string, args ...string) string {
		t.Helper()
		return cc.run(t, what, name, args...)
	}
	built, loaded := cc.loadImages(t)
	registry, err := c.StartEtcdRegistry(ctx, "registry")
	if err != nil {
		t.Fatal(err)
	}
	// The bridge, on a node's own network, reaches the registry the way
	// the kubelet reaches the API server: at the same loopback port.
	if u, err := url.Parse(registry.Endpoint); err != nil {
		t.Fatal(err)
	} else if port, err := strconv.Atoi(u.Port()); err != nil {
		t.Fatal(err)
	} else if err := c.ExposeToRealNodes(port); err != nil {
		t.Fatal(err)
	}
	values := chartValues(t, c, registry.Endpoint)

	start := time.Now()
	run("helm install", helm, "install", "lifeline", "charts/lifeline", "--namespace", chartNamespace, "--create-namespace",
		"-f", values, "--wait", "--timeout", "5m")
	installed := time.Since(start)
	t.Logf("images built in %v, loaded into 2 nodes in %v; helm install --wait took %v", built.Round(time.Second), loaded.Round(time.Second), installed.Round(time.Second))

	managers := runningOnRealNodes(t, client, "app.kubernetes.io/component=manager", 2)
	runningOnRealNodes(t, client, "app.kubernetes.io/component=bridge", 1)
	runningOnRealNodes(t, client, "app.kubernetes.io/component=node-agent", 2)
	if managers[0].Spec.NodeName == managers[1].Spec.NodeName {
		t.Errorf("both manager replicas on %s", managers[0].Spec.NodeName)
	}
	for _, p := range managers {
		if p.Spec.ServiceAccountName != "lifeline-manager" || !p.Spec.HostNetwork || p.Status.PodIP != c.RealNodeIP(p.Spec.NodeName).String() {
			t.Errorf("manager %s: service account %q, host network %v, IP %s on %s", p.Name, p.Spec.ServiceAccountName, p.Spec.HostNetwork, p.Status.PodIP, p.Spec.NodeName)
		}
	}
	checkProcesses(t, c, "lifeline-manage", 2)
	checkProcesses(t, c, "lifeline-bridge", 1)

	// The seed scenario, under the chart's manager: defaulted and validated
	// by its webhooks (reached through the Service's endpoints), run by its
	// controllers, registered by its bridge.
	// helm --wait waits for Ready pods; the webhooks are called once the
	// Service's EndpointSlice lists them.
	poll(t, time.Minute, "the webhook Service's endpoints", func(ctx context.Context) (bool, string) {
		slices, err := client.DiscoveryV1().EndpointSlices(chartNamespace).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=lifeline-webhook"})
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready {
					ready++
				}
			}
		}
		return ready == 2, fmt.Sprintf("%+v", slices.Items)
	})
	run("apply the seed scenario", kubectl, "apply", "-f", "config/samples")
	poll(t, 2*time.Minute, "the seed CloneSet defaulted and available", func(ctx context.Context) (bool, string) {
		out, err := exec.Command(kubectl, "--kubeconfig", c.Kubeconfig, "-n", "demo", "get", "clone", "cloneset-lifecycle-demo",
			"-o", "jsonpath={.spec.updateStrategy.rollingUpdate.partition} {.spec.revisionHistoryLimit} {.status.availableReplicas}").CombinedOutput()
		return err == nil && string(out) == "0 10 2", fmt.Sprintf("%q %v", out, err)
	})
	refused := func() {
		t.Helper()
		out, err := exec.Command(kubectl, "--kubeconfig", c.Kubeconfig, "-n", "demo", "patch", "clone", "cloneset-lifecycle-demo",
			"--type=merge", "-p", `{"spec":{"updateStrategy":{"type":"OnDelete"}}}`).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "must be 'ReCreate', InPlaceIfPossible or 'InPlaceOnly'") {
			t.Errorf("an invalid update got through the chart's webhook: %v\n%s", err, out)
		}
	}
	refused()
	poll(t, 2*time.Minute, "the demo pods registered by the chart's bridge", func(ctx context.Context) (bool, string) {
		n, err := registryEntries(ctx, c, registry.Endpoint)
		return err == nil && n >= 2, fmt.Sprintf("%d entries %v", n, err)
	})

	t.Run("killing the leader's container hands the controllers over", func(t *testing.T) {
		leader, holder := leaderPod(t, client, managers)
		killContainer(t, c, leader)
		poll(t, 2*time.Minute, "a new leader", func(ctx context.Context) (bool, string) {
			lease, err := client.CoordinationV1().Leases(chartNamespace).Get(ctx, "lifeline-manager.lifeline.dev", metav1.GetOptions{})
			if err != nil || lease.Spec.HolderIdentity == nil {
				return false, fmt.Sprint(err)
			}
			return *lease.Spec.HolderIdentity != holder, "held by " + *lease.Spec.HolderIdentity
		})
		poll(t, time.Minute, "the killed container restarted", func(ctx context.Context) (bool, string) {
			p, err := client.CoreV1().Pods(chartNamespace).Get(ctx, leader.Name, metav1.GetOptions{})
			if err != nil || len(p.Status.ContainerStatuses) == 0 {
				return false, fmt.Sprint(err)
			}
			st := p.Status.ContainerStatuses[0]
			return st.RestartCount == 1 && st.Ready, fmt.Sprintf("%+v", st)
		})
		run("scale the demo", kubectl, "-n", "demo", "scale", "clone", "cloneset-lifecycle-demo", "--replicas=3")
		poll(t, 2*time.Minute, "the new leader scales the demo", func(ctx context.Context) (bool, string) {
			out, err := exec.Command(kubectl, "--kubeconfig", c.Kubeconfig, "-n", "demo", "get", "clone", "cloneset-lifecycle-demo",
				"-o", "jsonpath={.status.availableReplicas}").CombinedOutput()
			return err == nil && string(out) == "3", fmt.Sprintf("%q %v", out, err)
		})
	})

	t.Run("the node agent restarts a container whose env reads a changed label", func(t *testing.T) {
		envFromLabel(t, cc)
	})

	t.Run("helm upgrade rolls the replicas and keeps the certificate", func(t *testing.T) {
		before, err := client.CoreV1().Secrets(chartNamespace).Get(ctx, "lifeline-webhook-certs", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		old := map[string]bool{}
		for _, p := range managers {
			old[p.Name] = true
		}
		start := time.Now()
		run("helm upgrade", helm, "upgrade", "lifeline", "charts/lifeline", "--namespace", chartNamespace,
			"-f", values, "--set", "features.hookWaitWarning=5m", "--wait", "--timeout", "5m")
		t.Logf("helm upgrade --wait took %v", time.Since(start).Round(time.Second))
		for _, p := range runningOnRealNodes(t, client, "app.kubernetes.io/component=manager", 2) {
			if old[p.Name] || !strings.Contains(strings.Join(p.Spec.Containers[0].Args, " "), "--hook-wait-warning=5m") {
				t.Errorf("manager %s after the upgrade: args %v", p.Name, p.Spec.Containers[0].Args)
			}
		}
		after, err := client.CoreV1().Secrets(chartNamespace).Get(ctx, "lifeline-webhook-certs", metav1.GetOptions{})
		if err != nil || !bytes.Equal(after.Data["ca.crt"], before.Data["ca.crt"]) {
			t.Errorf("the webhook CA changed across the upgrade (%v)", err)
		}
		refused()
	})

	t.Run("helm uninstall keeps the CRDs and the workloads", func(t *testing.T) {
		run("helm uninstall", helm, "uninstall", "lifeline", "--namespace", chartNamespace, "--wait")
		if _, err := client.AppsV1().Deployments(chartNamespace).Get(ctx, "lifeline-manager", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the manager Deployment after uninstall: %v", err)
		}
		hooks, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hooks.Items {
			if strings.Contains(h.Name, "lifeline") {
				t.Errorf("webhook configuration %s left after uninstall", h.Name)
			}
		}
		if _, err := client.RbacV1().ClusterRoles().Get(ctx, "lifeline-manager", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the manager's ClusterRole after uninstall: %v", err)
		}
		out := run("the CRDs and the demo", kubectl, "-n", "demo", "get", "crd/clonesets.apps.kruise.io", "clone/cloneset-lifecycle-demo", "-o", "name")
		if strings.Count(out, "\n") != 2 {
			t.Errorf("after uninstall: %s", out)
		}
		pods, err := client.CoreV1().Pods("demo").List(ctx, metav1.ListOptions{LabelSelector: "app=nginx"})
		if err != nil || len(pods.Items) != 3 {
			t.Errorf("the demo CloneSet's pods after uninstall: %d, %v", len(pods.Items), err)
		}
	})
}

// chartValues writes the values a user of a cluster like this one sets:
// the images loaded into the nodes, the host's network and the API
// server's address, the real nodes, the node agent on them, and the bridge
// for the seed scenario.
func chartValues(t *testing.T, c *cluster.Cluster, registry string) string {
	t.Helper()
	server, err := url.Parse(c.Server())
	if err != nil {
		t.Fatal(err)
	}
	placement := fmt.Sprintf("nodeSelector: {%s: \"true\"}\ntolerations: [{key: %s, operator: Equal, value: %q, effect: %s}]\n",
		cluster.RealNodeLabel, cluster.RealNodeTaint.Key, cluster.RealNodeTaint.Value, cluster.RealNodeTaint.Effect)
	values := fmt.Sprintf(`image: {repository: ghcr.io/lifeline-k8s/lifeline-manager, tag: chart-test, pullPolicy: Never}
hostNetwork: true
apiServer: {host: %q, port: %s}
%s
nodeAgent:
  enabled: true
  image: {repository: ghcr.io/lifeline-k8s/lifeline-node-agent, tag: chart-test, pullPolicy: Never}
  # The local cluster's real nodes each have their containerd socket in a
  # folder named after the node.
  criSocketDir: %q
  criSocket: $(NODE_NAME)/containerd.sock
  healthPort: 8092
  metricsPort: 8454
  nodeSelector: {%s: "true"}
bridge:
  enabled: true
  replicas: 1
  image: {repository: ghcr.io/lifeline-k8s/lifeline-bridge, tag: chart-test, pullPolicy: Never}
  # On the host's network beside a manager: ports of its own.
  healthPort: 8091
  metricsPort: 8453
%s
  config:
    name: registry
    namespace: demo
    workloads: [{kind: CloneSet}, {kind: StatefulSet}]
    port: 80
    timeout: 1m
    etcd: {endpoints: [%q], prefix: /services}
`, server.Hostname(), server.Port(), placement, c.CRISocketDir(), cluster.RealNodeLabel, indent(placement, "  "), registry)
	path := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(path, []byte(values), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	return prefix + strings.Join(lines, "\n"+prefix)
}

// runningOnRealNodes waits for n Ready pods of the release matching
// selector and checks they run real containers on real nodes.
func runningOnRealNodes(t *testing.T, client kubernetes.Interface, selector string, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	poll(t, 2*time.Minute, fmt.Sprintf("%d pods %s Ready", n, selector), func(ctx context.Context) (bool, string) {
		list, err := client.CoreV1().Pods(chartNamespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err.Error()
		}
		pods = nil
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil {
				pods = append(pods, p)
			}
		}
		ready := 0
		for _, p := range pods {
			if podReady(&p) {
				ready++
			}
		}
		return len(pods) == n && ready == n, fmt.Sprintf("%d pods, %d Ready", len(pods), ready)
	})
	for _, p := range pods {
		st := p.Status.ContainerStatuses[0]
		if !strings.HasPrefix(p.Spec.NodeName, "real-node-") || !strings.HasPrefix(st.ContainerID, "containerd://") {
			t.Errorf("pod %s on %s, container %s", p.Name, p.Spec.NodeName, st.ContainerID)
		}
	}
	return pods
}

// checkProcesses finds the release's processes named comm in the real
// nodes' cgroups and checks, from /proc, that they run as the images'
// non-root user on a read-only root filesystem.
func checkProcesses(t *testing.T, c *cluster.Cluster, comm string, want int) {
	t.Helper()
	found := 0
	for _, pid := range processesIn(c, comm) {
		found++
		status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" && f[1] != "65532" {
				t.Errorf("%s (pid %d) runs as uid %s, want 65532", comm, pid, f[1])
			}
		}
		mounts, _ := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
		for _, line := range strings.Split(string(mounts), "\n") {
			if f := strings.Fields(line); len(f) > 5 && f[4] == "/" && !strings.HasPrefix(f[5], "ro") {
				t.Errorf("%s (pid %d): root filesystem mounted %s, want read-only", comm, pid, f[5])
			}
		}
	}
	if found != want {
		t.Errorf("%d %s processes in the real nodes' cgroups, want %d", found, comm, want)
	}
}

// processesIn are the processes named comm in the real nodes' cgroups.
func processesIn(c *cluster.Cluster, comm string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		name, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err != nil || strings.TrimSpace(string(name)) != comm {
			continue
		}
		cgroups, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		for _, root := range c.RealNodeCgroupRoots() {
			if strings.Contains(string(cgroups), root+"/") {
				var pid int
				fmt.Sscan(e.Name(), &pid)
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// leaderPod reads the lease and finds its holder among the manager pods
// by their logs (kubectl logs through the API server and the kubelet):
// on the host's network every replica has the host's name.
func leaderPod(t *testing.T, client kubernetes.Interface, managers []corev1.Pod) (corev1.Pod, string) {
	t.Helper()
	var leader corev1.Pod
	var holder string
	poll(t, time.Minute, "a leader among the manager pods", func(ctx context.Context) (bool, string) {
		lease, err := client.CoordinationV1().Leases(chartNamespace).Get(ctx, "lifeline-manager.lifeline.dev", metav1.GetOptions{})
		if err != nil || lease.Spec.HolderIdentity == nil {
			return false, fmt.Sprint(err)
		}
		holder = *lease.Spec.HolderIdentity
		for _, p := range managers {
			logs, err := client.CoreV1().Pods(chartNamespace).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
			if err != nil {
				return false, "logs: " + err.Error()
			}
			if bytes.Contains(bytes.ToLower(logs), []byte("successfully acquired lease")) {
				leader = p
				return true, ""
			}
		}
		return false, "no replica logged its election"
	})
	return leader, holder
}

// killContainer SIGKILLs the process of a pod's container, found by the
// pod's UID in its cgroup path, as an OOM kill or a crash would.
func killContainer(t *testing.T, c *cluster.Cluster, pod corev1.Pod) {
	t.Helper()
	uid := string(pod.UID)
	for _, pid := range processesIn(c, "lifeline-manage") {
		cgroups, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if strings.Contains(string(cgroups), "pod"+uid) {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no process of pod %s", pod.Name)
}

// poll is testenv.Eventually for a condition that cannot fail.
func poll(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	testenv.Eventually(t, nil, timeout, what, func(ctx context.Context) (bool, string, error) {
		ok, why := cond(ctx)
		return ok, why, nil
	})
}

// registryEntries counts the entries the bridge wrote for the demo.
func registryEntries(ctx context.Context, c *cluster.Cluster, endpoint string) (int64, error) {
	etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return 0, err
	}
	defer etcd.Close()
	resp, err := etcd.Get(ctx, "/services/demo/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	return resp.Count, nil
}

// clusterDir is a folder for a test's cluster, kept (and named) when
// LIFELINE_E2E_KEEP_LOGS is set.
func clusterDir(t *testing.T) string {
	if os.Getenv("LIFELINE_E2E_KEEP_LOGS") == "" {
		return t.TempDir()
	}
	dir, err := os.MkdirTemp("", "lifeline-realnode-")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster folder (kept): %s", dir)
	return dir
}

// dumpPods logs what a failed test needs to know of a namespace's pods:
// status and the end of each container's log.
func dumpPods(t *testing.T, client kubernetes.Interface, ns string) {
	ctx := context.Background()
	pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("listing pods of %s: %v", ns, err)
		return
	}
	for _, p := range pods.Items {
		t.Logf("pod %s on %s: phase %s, conditions %+v, containers %+v", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Conditions, p.Status.ContainerStatuses)
		tail := int64(20)
		logs, err := client.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{TailLines: &tail}).DoRaw(ctx)
		t.Logf("its log (%v):\n%s", err, logs)
	}
}
