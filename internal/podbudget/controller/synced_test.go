package controller

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
)

type syncedWhen bool

func (s *syncedWhen) Synced(string) bool { return bool(*s) }

// A budget new to a namespace whose pods the cache has not taken in yet
// is not counted: no status until the cache holds them all.
func TestABudgetWaitsForItsNamespacesPods(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, policyv1alpha1.AddToScheme, appsv1alpha1.AddToScheme, appsv1beta1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	pub := &policyv1alpha1.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Generation: 1},
		Spec: policyv1alpha1.PodUnavailableBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			MaxUnavailable: ptr.To(intstr.FromInt32(1))}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1", Labels: map[string]string{"app": "web"}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(pub).
		WithObjects(pub, pod, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}).Build()
	synced := syncedWhen(false)
	r := &Reconciler{Client: c, Recorder: events.NewFakeRecorder(10), Clock: clock.RealClock{}, Pods: &synced}
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(pub)}
	got := &policyv1alpha1.PodUnavailableBudget{}

	res, err := r.Reconcile(context.Background(), req)
	if err != nil || res.RequeueAfter == 0 {
		t.Fatalf("not synced: %+v, %v; want a requeue", res, err)
	}
	if err := c.Get(context.Background(), req.NamespacedName, got); err != nil || got.Status.ObservedGeneration != 0 {
		t.Fatalf("a status was written from a namespace not synced: %+v (%v)", got.Status, err)
	}
	synced = true
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(context.Background(), req.NamespacedName, got); err != nil || got.Status.CurrentAvailable != 1 || got.Status.ObservedGeneration != 1 {
		t.Fatalf("synced: status %+v (%v), want the one pod counted", got.Status, err)
	}
}
