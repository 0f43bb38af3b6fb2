package conversion

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	policyv1beta1 "github.com/lifeline-k8s/lifeline/api/policy/v1beta1"
)

// The hub client reads and writes only v1beta1: the fake client below
// stores objects under the version they were written in, so a v1alpha1
// read or write that reached it would find nothing or store a second
// object.
func TestHubClient(t *testing.T) {
	ctx := context.Background()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{appsv1alpha1.AddToScheme, appsv1beta1.AddToScheme, policyv1alpha1.AddToScheme, policyv1beta1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	stored := &appsv1beta1.CloneSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec: appsv1beta1.CloneSetSpec{Replicas: ptr.To[int32](3),
			ScaleStrategy:  appsv1beta1.CloneSetScaleStrategy{ExcludePreparingDelete: true},
			UpdateStrategy: appsv1beta1.CloneSetUpdateStrategy{Type: appsv1beta1.RollingUpdateCloneSetUpdateStrategyType}}}
	raw := fake.NewClientBuilder().WithScheme(s).WithObjects(stored).WithStatusSubresource(&appsv1beta1.CloneSet{}).Build()
	c := HubClient(raw)

	cs := &appsv1alpha1.CloneSet{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "web"}, cs); err != nil {
		t.Fatal(err)
	}
	if *cs.Spec.Replicas != 3 || cs.Spec.UpdateStrategy.Type != appsv1alpha1.RecreateCloneSetUpdateStrategyType {
		t.Errorf("read as v1alpha1: %+v", cs.Spec)
	}
	list := &appsv1alpha1.CloneSetList{}
	if err := c.List(ctx, list, client.InNamespace("ns")); err != nil || len(list.Items) != 1 || list.Items[0].Name != "web" {
		t.Fatalf("list: %v %+v", err, list.Items)
	}

	cs.Status.ObservedGeneration, cs.Status.Replicas = 7, 3
	if err := c.Status().Update(ctx, cs); err != nil {
		t.Fatal(err)
	}
	hub := &appsv1beta1.CloneSet{}
	if err := raw.Get(ctx, client.ObjectKeyFromObject(stored), hub); err != nil {
		t.Fatal(err)
	}
	if hub.Status.ObservedGeneration != 7 || hub.Status.Replicas != 3 {
		t.Errorf("status written: %+v", hub.Status)
	}
	if !hub.Spec.ScaleStrategy.ExcludePreparingDelete {
		t.Error("a v1beta1-only field was lost by a write through v1alpha1")
	}
	if cs.ResourceVersion != hub.ResourceVersion {
		t.Errorf("the written object has resourceVersion %s, the server %s", cs.ResourceVersion, hub.ResourceVersion)
	}

	pps := &appsv1alpha1.PersistentPodState{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"},
		Spec: appsv1alpha1.PersistentPodStateSpec{TargetReference: appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db"}}}
	if err := c.Create(ctx, pps); err != nil {
		t.Fatal(err)
	}
	if err := raw.Get(ctx, client.ObjectKeyFromObject(pps), &appsv1beta1.PersistentPodState{}); err != nil {
		t.Errorf("created as v1alpha1, not stored as v1beta1: %v", err)
	}
	if err := c.Delete(ctx, pps); err != nil {
		t.Fatal(err)
	}
	if err := raw.Get(ctx, client.ObjectKeyFromObject(pps), &appsv1beta1.PersistentPodState{}); err == nil {
		t.Error("deleted through v1alpha1, still there")
	}
}
