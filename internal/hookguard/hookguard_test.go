package hookguard

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/pkg/workload"
)

// view is obj as the guard reads it; nil for a nil workload.
func view[T client.Object](obj T) *workload.View {
	if reflect.ValueOf(obj).IsNil() {
		return nil
	}
	v, _ := workload.ReadObject(obj)
	return &v
}

func TestGuards(t *testing.T) {
	guardedCS := func(mutate ...func(*appsv1beta1.CloneSet)) *appsv1beta1.CloneSet {
		cs := &appsv1beta1.CloneSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{appsv1alpha1.GuardHooksAnnotation: "true"}}}
		cs.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{"registered": "true"}}}
		for _, m := range mutate {
			m(cs)
		}
		return cs
	}
	pod := func(state pub.LifecycleStateType, registered string, mutate ...func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-a", Labels: map[string]string{pub.LifecycleStateKey: string(state), "registered": registered}}}
		for _, m := range mutate {
			m(p)
		}
		return p
	}
	for _, c := range []struct {
		name  string
		cs    *appsv1beta1.CloneSet
		pod   *corev1.Pod
		guard bool
	}{
		{"a Normal pod of a guarding CloneSet", guardedCS(), pod(pub.LifecycleStateNormal, "true"), true},
		{"a pod not registered yet", guardedCS(), pod(pub.LifecycleStatePreparingNormal, "false"), true},
		{"a pod held by its preDelete hook", guardedCS(), pod(pub.LifecycleStatePreparingDelete, "true"), true},
		{"a pod its hook released", guardedCS(), pod(pub.LifecycleStatePreparingDelete, "false"), false},
		{"a pod being deleted", guardedCS(), pod(pub.LifecycleStateNormal, "true", func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }), false},
		{"no opt-in", guardedCS(func(cs *appsv1beta1.CloneSet) { cs.Annotations = nil }), pod(pub.LifecycleStateNormal, "true"), false},
		{"opt-in off", guardedCS(func(cs *appsv1beta1.CloneSet) { cs.Annotations[appsv1alpha1.GuardHooksAnnotation] = "false" }), pod(pub.LifecycleStateNormal, "true"), false},
		{"no preDelete hook", guardedCS(func(cs *appsv1beta1.CloneSet) { cs.Spec.Lifecycle.PreDelete = nil }), pod(pub.LifecycleStateNormal, "true"), false},
		{"not a CloneSet pod", nil, pod(pub.LifecycleStateNormal, "true"), false},
		{"a pod of a CloneSet being deleted (the garbage collector's)", guardedCS(func(cs *appsv1beta1.CloneSet) { cs.DeletionTimestamp = &metav1.Time{} }), pod(pub.LifecycleStateNormal, "true"), false},
	} {
		if got, why := Guards(view(c.cs), c.pod); got != c.guard {
			t.Errorf("%s: guard %v (%s), want %v", c.name, got, why, c.guard)
		}
	}
	set := &appsv1beta1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Annotations: map[string]string{appsv1alpha1.GuardHooksAnnotation: "true"}}}
	set.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{"registered": "true"}}}
	if got, why := Guards(view(set), pod(pub.LifecycleStateNormal, "true")); !got {
		t.Errorf("a Normal pod of a guarding Advanced StatefulSet: not guarded (%s)", why)
	}
}

// A custom kind registered once (pkg/workload) is guarded like the
// built-in ones: a direct delete of a pod its preDelete hook holds is
// refused and the pod marked specified-delete.
func TestGuardServesARegisteredCustomKind(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Fleet"}
	if _, err := workload.Register(workload.Conventional(gvk, "fleets", "fleet")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { workload.Unregister(gvk.GroupKind()) })
	fleet := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Fleet",
		"metadata": map[string]any{"name": "ships", "namespace": "ns", "uid": "fleet-uid", "annotations": map[string]any{appsv1alpha1.GuardHooksAnnotation: "true"}},
		"spec":     map[string]any{"lifecycle": map[string]any{"preDelete": map[string]any{"labelsHandler": map[string]any{"registered": "true"}}}}}}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ships-0", Namespace: "ns", UID: "pod-uid",
		Labels:          map[string]string{pub.LifecycleStateKey: string(pub.LifecycleStateNormal), "registered": "true"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Fleet", Name: "ships", UID: "fleet-uid", Controller: ptr.To(true)}}}}
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(fleet, p).Build()
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(p), p); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	g := &HookGuard{Cache: c, Live: c, Writer: c, Recorder: events.NewFakeRecorder(10)}
	resp := g.Validate(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Delete, Namespace: "ns", Name: "ships-0", OldObject: runtime.RawExtension{Raw: raw},
		UserInfo: authenticationv1.UserInfo{Username: "someone"}}})
	if resp.Allowed || !strings.Contains(resp.Result.Message, "guarded by Fleet ships") {
		t.Fatalf("delete answered %+v, want refused by the guard", resp.Result)
	}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(p), p); err != nil {
		t.Fatal(err)
	}
	if p.Labels[appsv1alpha1.SpecifiedDeleteKey] != "true" {
		t.Errorf("pod labels %v: want it marked specified-delete", p.Labels)
	}
}
