package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
)

// drainNodes registers two simulated nodes of the test's own, tainted so
// that only the test's pods run there: the first schedulable, the second
// cordoned until the test lets pods move to it.
func drainNodes(t *testing.T, names ...string) {
	t.Helper()
	ctx := context.Background()
	for i, name := range names {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels:      map[string]string{corev1.LabelHostname: name, corev1.LabelOSStable: "linux", "type": "kwok"},
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}},
			Spec: corev1.NodeSpec{Unschedulable: i > 0, Taints: []corev1.Taint{{Key: "lifeline.dev/drain-test", Effect: corev1.TaintEffectNoSchedule}}}}
		if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
}

// watchAvailable follows the pods of ns matching selector from now on and
// returns the fewest that were ever available at once: Ready and not
// being deleted.
func watchAvailable(t *testing.T, ns, selector string) func() int {
	t.Helper()
	fewest, _ := followPods(t, ns, selector, func(p *corev1.Pod) bool {
		return p.DeletionTimestamp == nil && podCondition(p, corev1.PodReady) == corev1.ConditionTrue
	})
	return fewest
}

// TestKubectlDrainHonoursTheBudget: kubectl drain of a node holding all
// four pods of a Deployment under a budget allowing one unavailable evicts
// them one at a time, retrying the refused evictions (429) as it retries
// a PodDisruptionBudget's, and finishes once every pod has moved; judged
// by a watch of the pods, never fewer than three are available.
func TestKubectlDrainHonoursTheBudget(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	drainNodes(t, "drain-a", "drain-b")
	labels := map[string]string{"app": "drained"}
	create(t, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "drained"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](4), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			Containers:  []corev1.Container{{Name: "main", Image: "nginx:1.27"}},
			Tolerations: []corev1.Toleration{{Key: "lifeline.dev/drain-test", Operator: corev1.TolerationOpExists}},
			Affinity:    onNodes([]string{"drain-a", "drain-b"}),
		}}}})
	create(t, newBudget(ns, "drained", policyv1alpha1.PodUnavailableBudgetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels}, MaxUnavailable: ptr.To(intstr.FromInt32(1))}))
	waitBudget(t, ns, "drained", policyv1alpha1.PodUnavailableBudgetStatus{TotalReplicas: 4, DesiredAvailable: 3, CurrentAvailable: 4, UnavailableAllowed: 1})
	for _, p := range livePods(t, ns, "app=drained") {
		if p.Spec.NodeName != "drain-a" {
			t.Fatalf("%s runs on %s, want drain-a", p.Name, p.Spec.NodeName)
		}
	}
	if _, err := client.CoreV1().Nodes().Patch(ctx, "drain-b", types.MergePatchType, []byte(`{"spec":{"unschedulable":false}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	fewest := watchAvailable(t, ns, "app=drained")

	start := time.Now()
	out, err := exec.Command(local.Binaries["kubectl"], "--kubeconfig", local.Kubeconfig, "drain", "drain-a",
		"--ignore-daemonsets", "--delete-emptydir-data", "--timeout=3m").CombinedOutput()
	t.Logf("kubectl drain took %s", time.Since(start).Round(time.Second))
	if err != nil {
		t.Fatalf("kubectl drain: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "will retry after 5s") || !strings.Contains(string(out), "PodUnavailableBudget drained allows no more unavailable pods") {
		t.Errorf("kubectl drain never waited on the budget:\n%s", out)
	}
	if n := strings.Count(string(out), " evicted"); n != 4 {
		t.Errorf("%d pods evicted, want 4:\n%s", n, out)
	}
	waitBudget(t, ns, "drained", policyv1alpha1.PodUnavailableBudgetStatus{TotalReplicas: 4, DesiredAvailable: 3, CurrentAvailable: 4, UnavailableAllowed: 1})
	for _, p := range livePods(t, ns, "app=drained") {
		if p.Spec.NodeName != "drain-b" {
			t.Errorf("%s runs on %s after the drain, want drain-b", p.Name, p.Spec.NodeName)
		}
	}
	if n := fewest(); n < 3 {
		t.Errorf("%d pods available at the worst moment of the drain, want at least 3", n)
	}
}
