package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
)

// TestBudgetOverAdvancedDaemonSet: a PodUnavailableBudget whose targetRef
// names an Advanced DaemonSet expects a pod on each node the set should
// run on (status.desiredNumberScheduled; OpenKruise finds no scale
// subresource and protects nothing), and refuses the deletion that would
// take a second pod out of service.
func TestBudgetOverAdvancedDaemonSet(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	daemonNodes(t, ns, ns+"-a", ns+"-b", ns+"-c")
	set := newAdvancedDaemonSet(ns, "agent")
	create(t, set)
	waitAdvancedDaemonSet(t, set, "a pod Ready on each of the 3 nodes", dsSettled(3))
	create(t, newBudget(ns, "agent", policyv1alpha1.PodUnavailableBudgetSpec{
		TargetReference: &policyv1alpha1.TargetReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "DaemonSet", Name: "agent"},
		MaxUnavailable:  ptr.To(intstr.FromInt32(1))}))
	waitBudget(t, ns, "agent", policyv1alpha1.PodUnavailableBudgetStatus{TotalReplicas: 3, DesiredAvailable: 2, CurrentAvailable: 3, UnavailableAllowed: 1})
	pods := livePods(t, ns, "app=agent")
	if err := client.CoreV1().Pods(ns).Delete(ctx, pods[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("the first deletion, which the budget allows: %v", err)
	}
	err := client.CoreV1().Pods(ns).Delete(ctx, pods[1].Name, metav1.DeleteOptions{})
	if !apierrors.IsForbidden(err) && !apierrors.IsTooManyRequests(err) {
		t.Fatalf("the second deletion: %v, want it refused by the budget", err)
	}
	waitAdvancedDaemonSet(t, set, "the deleted pod replaced", dsSettled(3))
}

// TestHookGuardOfAdvancedDaemonSet: with lifeline.dev/guard-hooks on an
// Advanced DaemonSet, a kubectl delete of its pod is refused and the pod
// goes through its preDelete hook instead: held in PreparingDelete until
// its operator (this test) releases it, then deleted by the set and made
// again on the same node.
func TestHookGuardOfAdvancedDaemonSet(t *testing.T) {
	ns := newNamespace(t)
	node := ns + "-a"
	daemonNodes(t, ns, node)
	log := logPods(t, ns)
	const hook = "example.com/registered"
	set := newAdvancedDaemonSet(ns, "agent")
	set.Annotations = map[string]string{appsv1alpha1.GuardHooksAnnotation: "true"}
	set.Spec.Template.Labels[hook] = "true"
	set.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{hook: "true"}}}
	create(t, set)
	waitAdvancedDaemonSet(t, set, "a pod Ready on the node", dsSettled(1))
	victim := livePods(t, ns, "app=agent")[0]
	out, err := exec.Command(local.Binaries["kubectl"], "--kubeconfig", local.Kubeconfig, "-n", ns, "delete", "pod", victim.Name, "--wait=false").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "guarded by DaemonSet agent") || !strings.Contains(string(out), "Forbidden") {
		t.Fatalf("kubectl delete of a guarded pod: %v\n%s", err, out)
	}
	eventually(t, time.Minute, victim.Name+" held in PreparingDelete", func(ctx context.Context) (bool, string, error) {
		pod, err := client.CoreV1().Pods(ns).Get(ctx, victim.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return pod.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStatePreparingDelete), fmt.Sprint(pod.Labels), nil
	})
	patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, hook))
	if _, err := client.CoreV1().Pods(ns).Patch(context.Background(), victim.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "a new pod Ready on the node", func(ctx context.Context) (bool, string, error) {
		pods := livePods(t, ns, "app=agent")
		if len(pods) != 1 {
			return false, fmt.Sprintf("%d pods", len(pods)), nil
		}
		p := pods[0]
		return p.UID != victim.UID && p.Spec.NodeName == node && podCondition(&p, corev1.PodReady) == corev1.ConditionTrue, p.Name, nil
	})
	for _, ev := range log.all() {
		if isDelete(ev) && ev.pod.Labels[hook] == "true" {
			t.Fatalf("%s was deleted while its preDelete hook held it", ev.pod.Name)
		}
	}
}

// TestKubectlDrainWithAdvancedDaemonSet: kubectl drain knows only native
// DaemonSets, so it takes an Advanced DaemonSet's pod for an orphan and
// evicts it with --force (as it would under OpenKruise); the eviction
// goes through the budget, and the set puts its pod back on the cordoned
// node, which its pods tolerate, as a native DaemonSet's do.
func TestKubectlDrainWithAdvancedDaemonSet(t *testing.T) {
	ns := newNamespace(t)
	node := ns + "-a"
	daemonNodes(t, ns, node)
	set := newAdvancedDaemonSet(ns, "agent")
	create(t, set)
	waitAdvancedDaemonSet(t, set, "a pod Ready on the node", dsSettled(1))
	create(t, newBudget(ns, "agent", policyv1alpha1.PodUnavailableBudgetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}}, MaxUnavailable: ptr.To(intstr.FromInt32(1))}))
	waitBudget(t, ns, "agent", policyv1alpha1.PodUnavailableBudgetStatus{TotalReplicas: 1, DesiredAvailable: 0, CurrentAvailable: 1, UnavailableAllowed: 1})
	victim := livePods(t, ns, "app=agent")[0]
	out, err := exec.Command(local.Binaries["kubectl"], "--kubeconfig", local.Kubeconfig, "drain", node,
		"--ignore-daemonsets", "--delete-emptydir-data", "--force", "--timeout=2m").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl drain: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), victim.Name+" evicted") {
		t.Fatalf("kubectl drain did not evict %s:\n%s", victim.Name, out)
	}
	eventually(t, time.Minute, "the set's pod back on the cordoned node", func(ctx context.Context) (bool, string, error) {
		pods := livePods(t, ns, "app=agent")
		if len(pods) != 1 {
			return false, fmt.Sprintf("%d pods", len(pods)), nil
		}
		p := pods[0]
		return p.UID != victim.UID && p.Spec.NodeName == node && podCondition(&p, corev1.PodReady) == corev1.ConditionTrue, p.Name, nil
	})
}

// TestAdvancedDaemonSetSeesV1alpha1Pods is openkruise/kruise#2517: pods
// made by OpenKruise up to v1.8 name their set apps.kruise.io/v1alpha1 in
// their owner reference, and v1.9 ignores their events, so a set stalls
// after the upgrade. Here such a pod's creation wakes the set: a second
// pod on a node (a younger one) is deleted at once, no resync needed.
func TestAdvancedDaemonSetSeesV1alpha1Pods(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	node := ns + "-a"
	daemonNodes(t, ns, node)
	set := newAdvancedDaemonSet(ns, "agent")
	create(t, set)
	waitAdvancedDaemonSet(t, set, "a pod Ready on the node", dsSettled(1))
	kept := livePods(t, ns, "app=agent")[0]
	// Creation times have a second's resolution: a pod created in the same
	// second as the kept one ties with it by age, and the set keeps the one
	// whose name sorts first, as the native DaemonSet does. The extra pod
	// must be the younger one.
	eventually(t, 5*time.Second, "a second past the kept pod's creation", func(context.Context) (bool, string, error) {
		return time.Now().After(kept.CreationTimestamp.Add(time.Second)), "", nil
	})
	extra := kept.DeepCopy()
	extra.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: "agent-v18", Labels: kept.Labels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "DaemonSet", Name: set.Name, UID: set.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}}
	extra.Spec.NodeName = node
	extra.Status = corev1.PodStatus{}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, extra, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the v1alpha1-owned extra pod deleted by the set", func(ctx context.Context) (bool, string, error) {
		var names []string
		for _, p := range livePods(t, ns, "app=agent") {
			names = append(names, p.Name)
		}
		return len(names) == 1 && names[0] == kept.Name, fmt.Sprint(names), nil
	})
}
