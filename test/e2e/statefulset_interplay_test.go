package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
)

// TestPersistentPodStateOverAdvancedStatefulSet: a PersistentPodState
// targets an Advanced StatefulSet as it does a native one: its Ready pods
// are recorded (the reserved ordinal has none), the target is Ready, and a
// pod deleted comes back in its recorded zone.
func TestPersistentPodStateOverAdvancedStatefulSet(t *testing.T) {
	ns := newNamespace(t)
	set := newAdvancedStatefulSet(ns, "db", 3, appsv1.ParallelPodManagement)
	set.Spec.ReserveOrdinals = []intstr.IntOrString{intstr.FromInt32(1)}
	set.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateStatefulSetStrategy{MaxUnavailable: ptr.To(intstr.FromInt32(2))}
	if err := k8s.Create(context.Background(), set); err != nil {
		t.Fatal(err)
	}
	create(t, &appsv1alpha1.PersistentPodState{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}, Spec: appsv1alpha1.PersistentPodStateSpec{
		TargetReference:            appsv1alpha1.TargetReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "StatefulSet", Name: "db"},
		RequiredPersistentTopology: &appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{corev1.LabelTopologyZone}}}})
	pods := []string{"db-0", "db-2", "db-3"}
	pps := waitRecords(t, ns, "db", pods...)
	if c := findCondition(pps.Status.Conditions, "TargetReady"); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("TargetReady %+v", c)
	}
	for name, pod := range rebuild(t, ns, []string{"db-2"}) {
		zone := pps.Status.PodStates[name].NodeTopologyLabels[corev1.LabelTopologyZone]
		if zone == "" || pod.Spec.NodeSelector[corev1.LabelTopologyZone] != zone || nodeZone(t, pod.Spec.NodeName) != zone {
			t.Errorf("%s came back on %s (zone %s) with selector %v, recorded zone %s", name, pod.Spec.NodeName, nodeZone(t, pod.Spec.NodeName), pod.Spec.NodeSelector, zone)
		}
	}
}

// TestPersistentPodStateGeneratedForAdvancedStatefulSet: an Advanced
// StatefulSet's annotations generate its PersistentPodState (targetRef
// apps.kruise.io/v1beta1, owned by the set), which records its pods and
// follows the annotations; removing auto-generate deletes it.
func TestPersistentPodStateGeneratedForAdvancedStatefulSet(t *testing.T) {
	ns := newNamespace(t)
	set := newAdvancedStatefulSet(ns, "db", 2, appsv1.ParallelPodManagement)
	set.Annotations = map[string]string{appsv1alpha1.AnnotationAutoGeneratePersistentPodState: "true",
		appsv1alpha1.AnnotationRequiredPersistentTopology: corev1.LabelTopologyZone}
	if err := k8s.Create(context.Background(), set); err != nil {
		t.Fatal(err)
	}
	pps := waitRecords(t, ns, "db", "db-0", "db-1")
	want := appsv1alpha1.TargetReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "StatefulSet", Name: "db"}
	if owner := metav1.GetControllerOf(pps); pps.Spec.TargetReference != want || owner == nil || owner.UID != set.UID {
		t.Fatalf("generated %+v owned by %+v", pps.Spec.TargetReference, owner)
	}
	if c := findCondition(pps.Status.Conditions, "TargetReady"); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("TargetReady %+v", c)
	}
	updateAdvancedStatefulSet(t, set, func(s *appsv1beta1.StatefulSet) {
		s.Annotations[appsv1alpha1.AnnotationPreferredPersistentTopology] = corev1.LabelHostname
	})
	eventually(t, time.Minute, "the generated spec follows the annotations", func(ctx context.Context) (bool, string, error) {
		err := k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(pps), pps)
		return err == nil && len(pps.Spec.PreferredPersistentTopology) == 1, fmt.Sprintf("%+v %v", pps.Spec.PreferredPersistentTopology, err), nil
	})
	updateAdvancedStatefulSet(t, set, func(s *appsv1beta1.StatefulSet) {
		s.Annotations[appsv1alpha1.AnnotationAutoGeneratePersistentPodState] = "false"
	})
	eventually(t, time.Minute, "the generated PersistentPodState deleted", func(ctx context.Context) (bool, string, error) {
		err := k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(pps), pps)
		return apierrors.IsNotFound(err), fmt.Sprint(err), nil
	})
}

// TestKubectlDrainOfAdvancedStatefulSetHonoursTheBudget: kubectl drain of
// a node holding the four pods of an Advanced StatefulSet under a budget
// allowing one unavailable: the budget counts the set's replicas through
// its scale subresource, the drain evicts the pods one at a time as the
// set recreates each (same name) on the other node, and a watch of the
// pods never sees fewer than three available.
func TestKubectlDrainOfAdvancedStatefulSetHonoursTheBudget(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	drainNodes(t, "asts-drain-a", "asts-drain-b")
	set := newAdvancedStatefulSet(ns, "drained", 4, appsv1.ParallelPodManagement)
	set.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "lifeline.dev/drain-test", Operator: corev1.TolerationOpExists}}
	set.Spec.Template.Spec.Affinity = onNodes([]string{"asts-drain-a", "asts-drain-b"})
	if err := k8s.Create(ctx, set); err != nil {
		t.Fatal(err)
	}
	create(t, newBudget(ns, "drained", policyv1alpha1.PodUnavailableBudgetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "drained"}}, MaxUnavailable: ptr.To(intstr.FromInt32(1))}))
	waitBudget(t, ns, "drained", policyv1alpha1.PodUnavailableBudgetStatus{TotalReplicas: 4, DesiredAvailable: 3, CurrentAvailable: 4, UnavailableAllowed: 1})
	if _, err := client.CoreV1().Nodes().Patch(ctx, "asts-drain-b", types.MergePatchType, []byte(`{"spec":{"unschedulable":false}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	fewest := watchAvailable(t, ns, "app=drained")
	out, err := exec.Command(local.Binaries["kubectl"], "--kubeconfig", local.Kubeconfig, "drain", "asts-drain-a",
		"--ignore-daemonsets", "--delete-emptydir-data", "--timeout=3m").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl drain: %v\n%s", err, out)
	}
	if n := strings.Count(string(out), " evicted"); n != 4 {
		t.Errorf("%d pods evicted, want 4:\n%s", n, out)
	}
	if !strings.Contains(string(out), "PodUnavailableBudget drained allows no more unavailable pods") {
		t.Errorf("kubectl drain never waited on the budget:\n%s", out)
	}
	waitAdvancedStatefulSet(t, set, "4 pods Ready again", stsSettled(4))
	for _, p := range livePods(t, ns, "app=drained") {
		if p.Spec.NodeName != "asts-drain-b" {
			t.Errorf("%s runs on %s after the drain, want asts-drain-b", p.Name, p.Spec.NodeName)
		}
	}
	if n := fewest(); n < 3 {
		t.Errorf("%d pods available at the worst moment of the drain, want at least 3", n)
	}
}

// TestHookGuardOfAdvancedStatefulSet: with lifeline.dev/guard-hooks on an
// Advanced StatefulSet, a kubectl delete of its pod is refused and the pod
// goes through its preDelete hook instead: held in PreparingDelete until
// its operator (this test) releases it, then deleted by the set and made
// again at the same ordinal.
func TestHookGuardOfAdvancedStatefulSet(t *testing.T) {
	ns := newNamespace(t)
	log := logPods(t, ns)
	const hook = "example.com/registered"
	set := newAdvancedStatefulSet(ns, "db", 2, appsv1.ParallelPodManagement)
	set.Annotations = map[string]string{appsv1alpha1.GuardHooksAnnotation: "true"}
	set.Spec.Template.Labels[hook] = "true"
	set.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{hook: "true"}}}
	if err := k8s.Create(context.Background(), set); err != nil {
		t.Fatal(err)
	}
	waitAdvancedStatefulSet(t, set, "2 pods Ready", stsSettled(2))
	victim, err := client.CoreV1().Pods(ns).Get(context.Background(), "db-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(local.Binaries["kubectl"], "--kubeconfig", local.Kubeconfig, "-n", ns, "delete", "pod", "db-1", "--wait=false").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "guarded by StatefulSet db") || !strings.Contains(string(out), "Forbidden") {
		t.Fatalf("kubectl delete of a guarded pod: %v\n%s", err, out)
	}
	eventually(t, time.Minute, "db-1 held in PreparingDelete", func(ctx context.Context) (bool, string, error) {
		pod, err := client.CoreV1().Pods(ns).Get(ctx, "db-1", metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return pod.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStatePreparingDelete), fmt.Sprint(pod.Labels), nil
	})
	patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, hook))
	if _, err := client.CoreV1().Pods(ns).Patch(context.Background(), "db-1", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "db-1 made again", func(ctx context.Context) (bool, string, error) {
		pod, err := client.CoreV1().Pods(ns).Get(ctx, "db-1", metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return pod.UID != victim.UID && podCondition(pod, corev1.PodReady) == corev1.ConditionTrue, string(pod.UID), nil
	})
	for _, ev := range log.all() {
		if isDelete(ev) && ev.pod.Labels[hook] == "true" {
			t.Fatalf("%s was deleted while its preDelete hook held it", ev.pod.Name)
		}
	}
}
