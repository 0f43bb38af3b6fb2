package controller

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	fakescale "k8s.io/client-go/scale/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	lifelineworkload "github.com/lifeline-k8s/lifeline/pkg/workload"
)

// TestExpectedCountsWorkloadsWithoutLivePods: a budget over two
// Deployments expects both Deployments' replicas while one of them has no
// active pod (between its old pods' deletion and its new pods' creation in
// a rollout with maxUnavailable 100%). Counted from the pods alone, it
// expected 5 instead of 10 and admitted deletions down to 3 available pods
// of 10 (TestPodUnavailableBudgetOpenKruiseBehaviours, "selector two
// deployments", seen failing so). A Deployment being deleted, or whose
// template the selector does not match, counts nothing.
func TestExpectedCountsWorkloadsWithoutLivePods(t *testing.T) {
	const ns = "shop"
	guarded := map[string]string{"pub-controller": "true"}
	deployment := func(name string, replicas int32, template map[string]string, deleting bool) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(name)},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: template}}}}
		if deleting {
			d.DeletionTimestamp = ptr.To(metav1.Now())
			d.Finalizers = []string{"example.com/hold"}
		}
		return d
	}
	rolling := deployment("rolling", 5, guarded, false) // no pod at the moment
	steady := deployment("steady", 5, guarded, false)
	going := deployment("going", 5, guarded, true)
	other := deployment("other", 5, map[string]string{"app": "other"}, false)
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "steady-1", UID: "steady-1",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "steady", UID: "steady", Controller: ptr.To(true)}}}}
	var pods []*corev1.Pod
	for _, name := range []string{"steady-1-a", "steady-1-b", "steady-1-c", "steady-1-d", "steady-1-e"} {
		pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: guarded,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "steady-1", UID: "steady-1", Controller: ptr.To(true)}}}})
	}

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := appsv1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	// A custom kind registered once (pkg/workload) counts by its template
	// as the built-in ones do, through its scale subresource.
	fleetKind := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Fleet"}
	if _, err := lifelineworkload.Register(lifelineworkload.Conventional(fleetKind, "fleets", "fleet")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lifelineworkload.Unregister(fleetKind.GroupKind()) })
	fleet := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Fleet",
		"metadata": map[string]any{"namespace": ns, "name": "ships", "uid": "ships"},
		"spec":     map[string]any{"replicas": int64(3), "template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"pub-controller": "true"}}}}}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(rolling, steady, going, other, rs, fleet).Build()
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{appsv1.SchemeGroupVersion, fleetKind.GroupVersion()})
	mapper.Add(appsv1.SchemeGroupVersion.WithKind("Deployment"), meta.RESTScopeNamespace)
	mapper.Add(fleetKind, meta.RESTScopeNamespace)
	scales := &fakescale.FakeScaleClient{}
	scales.AddReactor("get", "deployments", func(action clienttesting.Action) (bool, runtime.Object, error) {
		name := action.(clienttesting.GetAction).GetName()
		d := &appsv1.Deployment{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
			return true, nil, err
		}
		return true, &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: *d.Spec.Replicas}}, nil
	})
	scales.AddReactor("get", "fleets", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 3}}, nil
	})
	r := &Reconciler{Client: c, Scales: scales, Mapper: mapper}

	got, err := r.expectedFor(context.Background(), ns, labels.SelectorFromSet(guarded), pods)
	if err != nil {
		t.Fatal(err)
	}
	if got != 13 {
		t.Errorf("expected %d pods, want 13 (rolling 5 without a live pod, steady 5, the fleet 3; going and other none)", got)
	}
}
