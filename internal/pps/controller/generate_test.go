package controller

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
)

func TestGenerateRequestRoundTrip(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "example.dev", Version: "v1", Kind: "Shard"}
	req := generateRequest(gvk, "ns", "shard")
	if req.Name != "generate#example.dev/v1#Shard#shard" {
		t.Fatalf("request %q, want OpenKruise's form", req.Name)
	}
	got, key, err := parseGenerateRequest(req)
	if err != nil || got != gvk || key != (types.NamespacedName{Namespace: "ns", Name: "shard"}) {
		t.Fatalf("parsed %v %v %v", got, key, err)
	}
	if _, _, err := parseGenerateRequest(generateRequest(gvk, "ns", "a#b")); err == nil {
		t.Error("a name with # parsed")
	}
}

// An Advanced StatefulSet's annotations generate its PersistentPodState
// (targetRef apps.kruise.io/v1beta1, owned by the set); a kind the
// generator does not serve is left alone.
func TestGeneratesForAdvancedStatefulSet(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = appsv1alpha1.AddToScheme(scheme)
	_ = appsv1beta1.AddToScheme(scheme)
	sts := &appsv1beta1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db", UID: "asts-uid", Annotations: map[string]string{
		appsv1alpha1.AnnotationAutoGeneratePersistentPodState: "true", appsv1alpha1.AnnotationRequiredPersistentTopology: "zone"}}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(sts).Build()
	g := &Generator{Client: c, Recorder: events.NewFakeRecorder(10)}
	if _, err := g.Reconcile(context.Background(), generateRequest(advancedStatefulSet, ns, "db")); err != nil {
		t.Fatal(err)
	}
	got := &appsv1alpha1.PersistentPodState{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "db"}, got); err != nil {
		t.Fatal(err)
	}
	want := appsv1alpha1.TargetReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "StatefulSet", Name: "db"}
	ref := metav1.GetControllerOf(got)
	if got.Spec.TargetReference != want || ref == nil || ref.UID != "asts-uid" || ref.Kind != "StatefulSet" || ref.APIVersion != "apps.kruise.io/v1beta1" ||
		ref.BlockOwnerDeletion != nil || got.Spec.RequiredPersistentTopology == nil {
		t.Fatalf("generated %+v owned by %+v", got.Spec, ref)
	}
	other := schema.GroupVersionKind{Group: "example.dev", Version: "v1", Kind: "Shard"}
	if _, err := g.Reconcile(context.Background(), generateRequest(other, ns, "db")); err != nil {
		t.Fatalf("a kind not served: %v", err)
	}
}
