package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/hack/binaries"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

// TestHookGuard: with lifeline.dev/guard-hooks on its CloneSet, a kubectl
// delete and an eviction of a pod are refused (403, and 429 as the eviction
// API answers a budget, so kubectl drain retries), and the pod goes through
// its preDelete hook instead: unregistered by the bridge before it is gone,
// and replaced. Without the opt-in a delete goes through as before.
func TestHookGuard(t *testing.T) {
	ctx := context.Background()
	root, err := binaries.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	r := etcdUnderTest(t, "registry-etcd-guard")
	etcd, registry := r.etcd, r.registry
	ns := newNamespace(t)
	config := filepath.Join(t.TempDir(), "bridge.yaml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf("name: guard\nnamespace: %s\nport: 8080\netcd: {endpoints: [%q], prefix: /services}\n", ns, registry.Endpoint)), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := local.StartBridge(ctx, cluster.BridgeOptions{Root: root, Dir: local.Dir, Config: config, Name: "lifeline-bridge-guard"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = local.StopProcess(b.Name, syscall.SIGTERM) })
	reg := watchRegistry(t, etcd, "/services/")
	watchPodsAgainst(t, ns, r, true)

	cs := newCloneSet(ns, "web", 2)
	cs.Annotations = map[string]string{appsv1alpha1.GuardHooksAnnotation: "true"}
	hooked := &pub.LifecycleHook{LabelsHandler: map[string]string{registered: "true"}}
	cs.Spec.Lifecycle = &pub.Lifecycle{PreNormal: hooked, PreDelete: hooked}
	cs.Spec.Template.Labels[registered] = "false"
	createCloneSet(t, cs)
	waitEntries(t, etcd, cs, 2)

	// goesThroughTheHook waits until pod is gone, after leaving the
	// registry, and a replacement is registered.
	goesThroughTheHook := func(pod corev1.Pod) {
		t.Helper()
		eventually(t, time.Minute, pod.Name+" deleted", func(ctx context.Context) (bool, string, error) {
			p, err := client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, "", nil
			}
			return false, fmt.Sprintf("%v %s", err, p.Labels[pub.LifecycleStateKey]), nil
		})
		if h := reg.history(entryKey(ns, pod.Name)); !hasSeq(h, "put", "delete") {
			t.Errorf("%s in the registry: %v, want registered then unregistered", pod.Name, h)
		}
		waitEntries(t, etcd, cs, 2)
	}

	victim := clonePods(t, cs)[0]
	kubectl := exec.Command(local.Binaries["kubectl"], "--kubeconfig", local.Kubeconfig, "-n", ns, "delete", "pod", victim.Name, "--wait=false")
	out, err := kubectl.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "guarded by CloneSet web") || !strings.Contains(string(out), "Forbidden") {
		t.Errorf("kubectl delete of a guarded pod: %v\n%s", err, out)
	}
	goesThroughTheHook(victim)

	victim = clonePods(t, cs)[0]
	err = client.CoreV1().Pods(ns).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: victim.Name, Namespace: ns}})
	if !apierrors.IsTooManyRequests(err) || !strings.Contains(err.Error(), "preDelete hook") {
		t.Errorf("eviction of a guarded pod: %v, want 429 naming the hook", err)
	}
	goesThroughTheHook(victim)

	// kubectl drain evicts, is answered 429, retries, and finishes once the
	// CloneSet has taken the pods through their hook.
	victim = clonePods(t, cs)[0]
	node := victim.Spec.NodeName
	drain := exec.Command(local.Binaries["kubectl"], "--kubeconfig", local.Kubeconfig, "drain", node,
		"--pod-selector=app=web", "--ignore-daemonsets", "--timeout=90s")
	if out, err := drain.CombinedOutput(); err != nil {
		t.Errorf("kubectl drain %s: %v\n%s", node, err, out)
	} else if !strings.Contains(string(out), "drained") {
		t.Errorf("kubectl drain %s:\n%s", node, out)
	}
	t.Cleanup(func() {
		_ = exec.Command(local.Binaries["kubectl"], "--kubeconfig", local.Kubeconfig, "uncordon", node).Run()
	})
	goesThroughTheHook(victim)

	// Without the opt-in, nothing changes: the delete goes through at once.
	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { delete(c.Annotations, appsv1alpha1.GuardHooksAnnotation) })
	victim = clonePods(t, cs)[0]
	if err := client.CoreV1().Pods(ns).Delete(ctx, victim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete without the opt-in: %v", err)
	}
	p, err := client.CoreV1().Pods(ns).Get(ctx, victim.Name, metav1.GetOptions{})
	if err == nil && p.DeletionTimestamp == nil {
		t.Errorf("without the opt-in, the deleted pod is not being deleted: %s", p.Labels[pub.LifecycleStateKey])
	}
}
