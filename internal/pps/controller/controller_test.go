package controller

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/ownerindex"
	"github.com/lifeline-k8s/lifeline/internal/pps/workloads"
)

const ns = "db"

func newState(apiVersion string) *appsv1alpha1.PersistentPodState {
	return &appsv1alpha1.PersistentPodState{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db", Generation: 1},
		Spec: appsv1alpha1.PersistentPodStateSpec{
			TargetReference:            appsv1alpha1.TargetReference{APIVersion: apiVersion, Kind: "StatefulSet", Name: "db"},
			RequiredPersistentTopology: &appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{"zone"}},
		},
	}
}

func readyPod(name string, owner types.UID, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: owner, Controller: ptr.To(true)}}},
		Spec:   corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}

func reconcileOnce(t *testing.T, objs ...client.Object) *appsv1alpha1.PersistentPodState {
	t.Helper()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = appsv1alpha1.AddToScheme(scheme)
	_ = appsv1beta1.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithStatusSubresource(&appsv1alpha1.PersistentPodState{}).
		WithIndex(&corev1.Pod{}, ownerindex.Field, ownerindex.ControllerUID).Build()
	r := &Reconciler{Client: c, Live: c, Recorder: events.NewFakeRecorder(20), Custom: &workloads.Whitelist{Reader: c}}
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "db"}}); err != nil {
		t.Fatal(err)
	}
	got := &appsv1alpha1.PersistentPodState{}
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "db"}, got); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestRecordsOnlyTheTargetsReadyPods(t *testing.T) {
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db", UID: "sts-uid"}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3)}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a", "other": "x"}}}
	notReady := readyPod("db-1", "sts-uid", "n1")
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	stranger := readyPod("db-2", "another-uid", "n1") // same labels and name pattern, another owner
	got := reconcileOnce(t, newState("apps/v1"), sts, node, readyPod("db-0", "sts-uid", "n1"), notReady, stranger)

	if len(got.Status.PodStates) != 1 {
		t.Fatalf("records %v, want db-0 only", got.Status.PodStates)
	}
	rec := got.Status.PodStates["db-0"]
	if rec.NodeName != "n1" || len(rec.NodeTopologyLabels) != 1 || rec.NodeTopologyLabels["zone"] != "a" {
		t.Errorf("db-0 recorded as %+v, want node n1 with zone=a only", rec)
	}
	c := meta.FindStatusCondition(got.Status.Conditions, ConditionTargetReady)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != "Found" || got.Status.ObservedGeneration != 1 {
		t.Errorf("condition %+v, observedGeneration %d", c, got.Status.ObservedGeneration)
	}
}

func TestAMissingTargetWaits(t *testing.T) {
	missing := reconcileOnce(t, newState("apps/v1"))
	if c := meta.FindStatusCondition(missing.Status.Conditions, ConditionTargetReady); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "NotFound" {
		t.Errorf("missing target: condition %+v, want False NotFound", c)
	}
}

// An Advanced StatefulSet is followed as a native one is, its reserved
// ordinals skipped: replicas 3 with 1 reserved are ordinals 0, 2 and 3,
// so a record of db-1 goes.
func TestAdvancedStatefulSetTargetSkipsReservedOrdinals(t *testing.T) {
	sts := &appsv1beta1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db", UID: "asts-uid"},
		Spec: appsv1beta1.StatefulSetSpec{Replicas: ptr.To[int32](3), ReserveOrdinals: []intstr.IntOrString{intstr.FromInt32(1)}}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a"}}}
	state := newState("apps.kruise.io/v1beta1")
	state.Status.PodStates = map[string]appsv1alpha1.PodState{"db-1": {NodeName: "n0"}}
	got := reconcileOnce(t, state, sts, node, readyPod("db-0", "asts-uid", "n1"), readyPod("db-3", "asts-uid", "n1"))
	if _, ok := got.Status.PodStates["db-1"]; ok || len(got.Status.PodStates) != 2 || got.Status.PodStates["db-3"].NodeName != "n1" {
		t.Errorf("records %v, want db-0 and db-3 (db-1 is reserved)", got.Status.PodStates)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, ConditionTargetReady); c == nil || c.Status != metav1.ConditionTrue || c.Reason != "Found" {
		t.Errorf("condition %+v, want True Found", c)
	}
}
