package phases

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	policyv1beta1 "github.com/lifeline-k8s/lifeline/api/policy/v1beta1"
)

// A budget's change wakes every workload of its namespace, and only those.
func TestWakeNamespace(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := appsv1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	set := func(ns, name string) *appsv1beta1.StatefulSet {
		return &appsv1beta1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	c := crfake.NewClientBuilder().WithScheme(scheme).WithObjects(set("a", "db"), set("a", "cache"), set("b", "other")).Build()
	h := WakeNamespace(c, func() client.ObjectList { return &appsv1beta1.StatefulSetList{} })
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	h.Create(context.Background(), event.CreateEvent{Object: &policyv1beta1.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "pub"}}}, q)
	got := map[string]bool{}
	for q.Len() > 0 {
		r, _ := q.Get()
		got[r.String()] = true
		q.Done(r)
	}
	if len(got) != 2 || !got["a/db"] || !got["a/cache"] {
		t.Errorf("woke %v, want a/db and a/cache", got)
	}
}
