// Package realnode tests the local cluster's real nodes themselves: that a
// pod runs real containers there, and that a cluster's tear-down leaves
// nothing on the machine. (Lifeline on real nodes is tested in test/e2e.)
package realnode

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

// TestTearDownLeavesNothingBehind starts a cluster with a real node, runs
// a pod there, stops the cluster and looks, on its own terms, for what
// the node could have left on the machine: mounts, the pod's network
// namespace, cgroups, processes, log links, and a folder that cannot be
// removed.
func TestTearDownLeavesNothingBehind(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	dir := t.TempDir()
	ctx := context.Background()
	// Folders every kubelet and containerd share: those that are not
	// there now must not be there after, unless another cluster's node
	// runs meanwhile (make test runs packages side by side).
	shared := []string{"/run/containerd", "/run/netns", "/run/lifeline", "/var/lib/kubelet", "/var/log/containers"}
	absent := map[string]bool{}
	for _, d := range shared {
		if _, err := os.Stat(d); os.IsNotExist(err) {
			absent[d] = true
		}
	}
	c, err := cluster.Start(ctx, cluster.Options{Dir: dir, Nodes: 1, RealNodes: 1, Progress: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			c.Stop()
		}
	}()
	client := kubernetes.NewForConfigOrDie(c.Config)
	if err := cluster.WaitForServiceAccount(ctx, client, "default"); err != nil {
		t.Fatal(err)
	}
	pod := testPod("teardown", c)
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var running *corev1.Pod
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		running = p
		return podReady(p), nil
	})
	if err != nil {
		t.Fatalf("pod never Ready on the real node: %v; last status %+v", err, running.Status)
	}
	st := running.Status.ContainerStatuses[0]
	if !strings.HasPrefix(st.ContainerID, "containerd://") || st.ImageID == "" || running.Status.PodIP == "" {
		t.Fatalf("not a real container: %+v, pod IP %q", st, running.Status.PodIP)
	}
	if got := readEvents(t, c, running.Name, "app"); !strings.Contains(got, "start v1") {
		t.Fatalf("the container did not log its start from inside: %q", got)
	}
	netns := recordedNetns(t, dir)
	if len(netns) == 0 {
		t.Fatal("the CNI plugin recorded no network namespace")
	}
	cgroups := cgroupDirs(c)
	nodeNamespaces, nodeLinks := c.RealNodeNetworks()
	for _, ns := range nodeNamespaces {
		if _, err := os.Stat(ns); err != nil {
			t.Fatalf("the node's network namespace %s: %v", ns, err)
		}
	}

	c.Stop()
	stopped = true
	for _, err := range c.StopErrors() {
		t.Errorf("tear-down: %v", err)
	}
	for _, m := range mountPoints(t) {
		if strings.HasPrefix(m, dir+"/") || netns[m] {
			t.Errorf("still mounted: %s", m)
		}
	}
	for ns := range netns {
		if _, err := os.Stat(ns); err == nil {
			t.Errorf("network namespace left: %s", ns)
		}
	}
	for _, ns := range nodeNamespaces {
		if _, err := os.Stat(ns); err == nil {
			t.Errorf("the node's network namespace left: %s", ns)
		}
	}
	for _, link := range nodeLinks {
		if _, err := os.Stat(filepath.Join("/sys/class/net", link)); err == nil {
			t.Errorf("the node's veth left: %s", link)
		}
	}
	if len(cgroups) == 0 {
		t.Error("found none of the node's cgroups while it ran: the check below would prove nothing")
	}
	for _, cg := range cgroups {
		if _, err := os.Stat(cg); err == nil {
			t.Errorf("cgroup left: %s", cg)
		}
	}
	if pids := processesNaming(dir); len(pids) > 0 {
		t.Errorf("processes left: %v", pids)
	}
	links, _ := os.ReadDir("/var/log/containers")
	for _, l := range links {
		if target, err := os.Readlink(filepath.Join("/var/log/containers", l.Name())); err == nil && strings.HasPrefix(target, dir) {
			t.Errorf("log link left: %s -> %s", l.Name(), target)
		}
	}
	if !otherKubelets() {
		for _, d := range shared {
			if _, err := os.Stat(d); err == nil && absent[d] {
				t.Errorf("%s was made by the cluster and left behind", d)
			}
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Errorf("the cluster's folder cannot be removed: %v", err)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func testPod(name string, c *cluster.Cluster) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{cluster.RealNodeLabel: "true"},
			Tolerations:                   []corev1.Toleration{cluster.RealNodeToleration()},
			TerminationGracePeriodSeconds: ptr.To[int64](5),
			Containers: []corev1.Container{{
				Name:            "app",
				Image:           cluster.TestAppImage("v1"),
				ImagePullPolicy: corev1.PullNever,
				Env: []corev1.EnvVar{
					{Name: "EVENTS_DIR", Value: "/events"},
					{Name: "CONTAINER_NAME", Value: "app"},
					{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/testapp", "probe"}}},
					PeriodSeconds: 1,
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "events", MountPath: "/events"}},
			}},
			Volumes: []corev1.Volume{{Name: "events", VolumeSource: corev1.VolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: c.EventsDir()},
			}}},
		},
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func readEvents(t *testing.T, c *cluster.Cluster, pod, container string) string {
	data, err := os.ReadFile(filepath.Join(c.EventsDir(), pod+"."+container))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func recordedNetns(t *testing.T, dir string) map[string]bool {
	out := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(dir, "realnodes", "node-*", "cni", "netns", "*"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSpace(string(data))] = true
	}
	return out
}

// cgroupDirs are the real nodes' cgroup roots, in every hierarchy that
// has them, where the kubelet made its kubepods.
func cgroupDirs(c *cluster.Cluster) []string {
	var out []string
	for _, root := range c.RealNodeCgroupRoots() {
		found, _ := filepath.Glob("/sys/fs/cgroup/*" + root + "/kubepods")
		for _, f := range found {
			out = append(out, filepath.Dir(f))
		}
	}
	return out
}

func mountPoints(t *testing.T) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		if fields := strings.Fields(s.Text()); len(fields) > 4 {
			out = append(out, fields[4])
		}
	}
	return out
}

func processesNaming(dir string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), dir) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return out
}

// otherKubelets says whether any kubelet runs on the machine (another
// package's cluster).
func otherKubelets() bool {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm")); err == nil && strings.TrimSpace(string(comm)) == "kubelet" {
			return true
		}
	}
	return false
}
