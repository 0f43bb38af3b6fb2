package render

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	policyv1beta1 "github.com/lifeline-k8s/lifeline/api/policy/v1beta1"
	"github.com/lifeline-k8s/lifeline/cmd/kubectl-lifeline/internal/diagnose"
	"github.com/lifeline-k8s/lifeline/pkg/workload"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// now is the fixed clock of every golden view.
var now = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }

// golden compares what print writes, in text and in JSON, with
// testdata/<name>.txt and .json.
func golden(t *testing.T, name string, print func(Printer) error) {
	t.Helper()
	for _, format := range []string{"", "json"} {
		var b bytes.Buffer
		if err := print(Printer{Out: &b, Format: format}); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join("testdata", name+map[string]string{"": ".txt", "json": ".json"}[format])
		if *update {
			if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("%v (go test ./internal/render -update writes it)", err)
		}
		if d := cmp.Diff(string(want), b.String()); d != "" {
			t.Errorf("%s differs (-want +got; -update rewrites it):\n%s", file, d)
		}
	}
}

// hold is the seeds' hook: a label the registry operator removes when the
// pod is out of the registry, and puts back when it is in again.
var hold = &pub.LifecycleHook{LabelsHandler: map[string]string{"example.com/registered": "true"}, MarkPodNotReady: true}

func cloneSet(replicas, partition int32, paused bool) *appsv1beta1.CloneSet {
	return &appsv1beta1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web", UID: "cs-uid", Generation: 4},
		Spec: appsv1beta1.CloneSetSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Lifecycle: &pub.Lifecycle{InPlaceUpdate: hold, PreDelete: hold, PreNormal: hold},
			UpdateStrategy: appsv1beta1.CloneSetUpdateStrategy{RollingUpdate: &appsv1beta1.RollingUpdateCloneSetStrategy{
				PodUpdatePolicy: "InPlaceIfPossible", MaxUnavailable: ptr.To(intstr.FromInt32(1)), Partition: ptr.To(intstr.FromInt32(partition)), Paused: paused}}},
		Status: appsv1beta1.CloneSetStatus{ObservedGeneration: 4, UpdateRevision: "web-7f9c", CurrentRevision: "web-5b6d"},
	}
}

// pod is a pod of the CloneSet at revision rev, Ready since 10 minutes,
// registered (the hook's label on) and Normal, changed by opts.
func pod(name, rev string, opts ...func(*corev1.Pod)) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name, CreationTimestamp: ago(20 * time.Minute),
			Labels:          map[string]string{"app": "web", "controller-revision-hash": rev, "example.com/registered": "true", pub.LifecycleStateKey: "Normal"},
			Annotations:     map[string]string{pub.LifecycleTimestampKey: ago(19 * time.Minute).Format(time.RFC3339)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", UID: "cs-uid", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: "kwok-node-1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: ago(20 * time.Minute)},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: ago(10 * time.Minute)}}},
	}
	for _, o := range opts {
		o(&p)
	}
	return p
}

func inState(s pub.LifecycleStateType, since time.Duration) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Labels[pub.LifecycleStateKey] = string(s)
		p.Annotations[pub.LifecycleTimestampKey] = ago(since).Format(time.RFC3339)
	}
}

func notReady(message string, since time.Duration) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Conditions[1] = corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: message, LastTransitionTime: ago(since)}
	}
}

func unregistered(p *corev1.Pod) { delete(p.Labels, "example.com/registered") }

func budget(allowed int32) policyv1beta1.PodUnavailableBudget {
	return policyv1beta1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web"},
		Spec:       policyv1beta1.PodUnavailableBudgetSpec{TargetReference: &policyv1beta1.TargetReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web"}, MaxUnavailable: ptr.To(intstr.FromInt32(1))},
		Status: policyv1beta1.PodUnavailableBudgetStatus{UnavailableAllowed: allowed, CurrentAvailable: 2 + allowed, DesiredAvailable: 2, TotalReplicas: 3,
			DisruptedPods: map[string]metav1.Time{"web-2": ago(5 * time.Second)}, UnavailablePods: map[string]metav1.Time{"web-0": ago(30 * time.Second)}},
	}
}

func statusOf(cs *appsv1beta1.CloneSet, pods []corev1.Pod, budgets []policyv1beta1.PodUnavailableBudget, events ...diagnose.Event) diagnose.StatusView {
	return diagnose.Status(diagnose.Snapshot{Now: now, Workload: workload.CloneSet.View(cs), Pods: pods, Budgets: budgets, Events: events})
}

func TestStatusGolden(t *testing.T) {
	cases := map[string]diagnose.StatusView{
		// An in-place update whose second pod waits on its inPlaceUpdate
		// hook: the operator has not taken it out of the registry.
		"status-inplace-hook": statusOf(cloneSet(3, 0, false), []corev1.Pod{
			pod("web-0", "web-7f9c"),
			pod("web-1", "web-5b6d", inState(pub.LifecycleStatePreparingUpdate, 4*time.Minute)),
			pod("web-2", "web-5b6d"),
		}, nil, diagnose.Event{Time: now.Add(-time.Minute), Type: "Warning", Reason: "LifecycleHookWaiting", Message: "web-1 waited on a lifecycle hook for longer than 3m0s; the hook operator has not released them", Regarding: "CloneSet/web"}),
		// A scale-in whose pod waits on its preDelete hook.
		"status-predelete-hook": statusOf(cloneSet(2, 0, false), []corev1.Pod{
			pod("web-0", "web-7f9c"), pod("web-1", "web-7f9c"),
			pod("web-2", "web-7f9c", inState(pub.LifecycleStatePreparingDelete, 90*time.Second)),
		}, nil),
		// A budget that allows nothing, because one pod is not Ready.
		"status-budget": statusOf(cloneSet(3, 0, false), []corev1.Pod{
			pod("web-0", "web-5b6d"),
			pod("web-1", "web-5b6d", notReady("containers with unready status: [main]", 2*time.Minute)),
			pod("web-2", "web-5b6d"),
		}, []policyv1beta1.PodUnavailableBudget{budget(0)}),
		"status-paused": statusOf(cloneSet(3, 0, true), []corev1.Pod{pod("web-0", "web-5b6d"), pod("web-1", "web-5b6d"), pod("web-2", "web-5b6d")}, nil),
		// An updated pod waiting for the operator to register it again.
		"status-updated-unregistered": statusOf(cloneSet(3, 1, false), []corev1.Pod{
			pod("web-0", "web-7f9c", inState(pub.LifecycleStateUpdated, 20*time.Second), unregistered),
			pod("web-1", "web-7f9c"), pod("web-2", "web-5b6d"),
		}, nil),
		"status-done": statusOf(cloneSet(3, 0, false), []corev1.Pod{pod("web-0", "web-7f9c"), pod("web-1", "web-7f9c"), pod("web-2", "web-7f9c")}, nil),
	}
	for name, v := range cases {
		t.Run(name, func(t *testing.T) { golden(t, name, func(p Printer) error { return p.Status(v) }) })
	}
}

func TestExplainGolden(t *testing.T) {
	cs := cloneSet(3, 0, false)
	held := pod("web-1", "web-5b6d", inState(pub.LifecycleStatePreparingUpdate, 4*time.Minute), func(p *corev1.Pod) {
		p.Annotations["hook.lifeline.dev/registry"] = `{"moment":"Registered","revision":"web-5b6d","at":"` + now.Add(-18*time.Minute).Format(time.RFC3339) + `"}`
		p.Status.Conditions = append(p.Status.Conditions,
			corev1.PodCondition{Type: "hook.lifeline.dev/registry", Status: corev1.ConditionFalse, Reason: "HandlerFailed", Message: "registry unreachable", LastTransitionTime: ago(3 * time.Minute)},
			corev1.PodCondition{Type: pub.KruisePodReadyConditionType, Status: corev1.ConditionFalse, Message: `[{"userAgent":"Lifeline","key":"lifecycle.inPlaceUpdate"}]`, LastTransitionTime: ago(4 * time.Minute)})
	})
	w := diagnose.Snapshot{Now: now, Workload: workload.CloneSet.View(cs), Pods: []corev1.Pod{held}, Budgets: []policyv1beta1.PodUnavailableBudget{budget(0)}}
	pps := appsv1beta1.PersistentPodState{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web"},
		Spec: appsv1beta1.PersistentPodStateSpec{TargetReference: appsv1beta1.TargetReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web"},
			RequiredPersistentTopology: &appsv1beta1.NodeTopologyTerm{Keys: []string{"topology.kubernetes.io/zone"}}},
		Status: appsv1beta1.PersistentPodStateStatus{PodStates: map[string]appsv1beta1.PodState{"web-1": {NodeName: "kwok-node-1", NodeTopologyLabels: map[string]string{"topology.kubernetes.io/zone": "zone-a"}}}}}
	v := diagnose.Explain(diagnose.PodSnapshot{Now: now, Pod: held, Owner: diagnose.OwnerRef{Kind: "CloneSet", Name: "web"}, Workload: &w,
		States: []appsv1beta1.PersistentPodState{pps}, Eviction: `admission webhook "vpod.lifeline.dev" denied the request: pub/web allows no more disruption`,
		Events: []diagnose.Event{
			{Time: now.Add(-4 * time.Minute), Type: "Normal", Reason: "LifecycleStateChanged", Message: "pod web-1: Normal → PreparingUpdate (picked for an in-place update)", Regarding: "CloneSet/web", Related: "Pod/web-1"},
			{Time: now.Add(-20 * time.Minute), Type: "Normal", Reason: "Scheduled", Message: "Successfully assigned demo/web-1 to kwok-node-1", Regarding: "Pod/web-1"},
			{Time: now.Add(-time.Minute), Type: "Warning", Reason: "PubPreventPodDeletion", Message: "pub/web allows no more disruption", Regarding: "Pod/web-1", Related: "PodUnavailableBudget/web", Count: 3},
		}})
	golden(t, "explain", func(p Printer) error { return p.Explain(v) })
}

func TestBudgetGolden(t *testing.T) {
	b := budget(0)
	pods := []corev1.Pod{pod("web-0", "web-7f9c"), pod("web-1", "web-5b6d", notReady("", time.Minute)), pod("web-2", "web-5b6d"), pod("other", "x", func(p *corev1.Pod) { p.OwnerReferences = nil })}
	owners := map[string]diagnose.OwnerRef{"web-0": {Kind: "CloneSet", Name: "web"}, "web-1": {Kind: "CloneSet", Name: "web"}, "web-2": {Kind: "CloneSet", Name: "web"}}
	v := diagnose.Budget(diagnose.BudgetSnapshot{Now: now, Budget: b, Pods: pods, Owners: owners, Events: []diagnose.Event{
		{Time: now.Add(-time.Minute), Type: "Warning", Reason: "PubPreventPodDeletion", Message: "pub/web allows no more disruption", Regarding: "Pod/web-2", Related: "PodUnavailableBudget/web"}}})
	golden(t, "budget", func(p Printer) error { return p.Budget(v) })
}
