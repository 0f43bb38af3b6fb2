package hookguard

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
