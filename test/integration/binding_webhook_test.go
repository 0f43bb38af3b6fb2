package integration

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
)

// TestBindingWebhookMakesPodsNormalInTheBind: the real API server copies the
// state label the binding webhook adds onto the pod in the bind itself, and
// refuses a bind whose resourceVersion precondition is stale, which is what
// keeps a bind from overwriting a state the webhook's cache had not seen.
func TestBindingWebhookMakesPodsNormalInTheBind(t *testing.T) {
	ctx := context.Background()
	cache := withWebhooks(t)
	ns := newNamespace(t)
	cs := createMinimalCloneSet(t, ns, "web")
	newPod := func(name string) *corev1.Pod {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
				Labels:          map[string]string{"app": "web", pub.LifecycleStateKey: string(pub.LifecycleStatePreparingNormal)},
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cs, appsv1alpha1.GroupVersion.WithKind("CloneSet"))}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}}},
		}
		if err := k8s.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		return pod
	}

	bound := newPod("web-0")
	// The webhook decides from its cache; a pod or CloneSet the cache
	// does not show yet is left alone (the controller makes the pod Normal
	// after the bind, which a test without one would take for a failure).
	poll(t, "the webhook's cache showing the pod and its CloneSet", func(ctx context.Context) bool {
		return cache.Get(ctx, client.ObjectKeyFromObject(bound), &corev1.Pod{}) == nil &&
			cache.Get(ctx, client.ObjectKeyFromObject(cs), &appsv1alpha1.CloneSet{}) == nil
	})
	bindPod(t, bound, "node-a")
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(bound), bound); err != nil {
		t.Fatal(err)
	}
	if bound.Spec.NodeName != "node-a" || bound.Labels[pub.LifecycleStateKey] != string(pub.LifecycleStateNormal) {
		t.Fatalf("after the bind: node %q state %q, want node-a Normal", bound.Spec.NodeName, bound.Labels[pub.LifecycleStateKey])
	}
	if bound.Annotations[pub.LifecycleTimestampKey] == "" {
		t.Errorf("pod %s made Normal without the lifecycle timestamp: %v", bound.Name, bound.Annotations)
	}

	// A bind conditioned on an older resourceVersion fails, and the
	// state the pod moved to in between stays.
	pod := newPod("moved")
	stale := pod.ResourceVersion
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, pub.LifecycleStateKey, pub.LifecycleStatePreparingDelete)
	if err := k8s.Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{ResourceVersion: stale, Labels: map[string]string{pub.LifecycleStateKey: string(pub.LifecycleStateNormal)}},
		Target:     corev1.ObjectReference{Kind: "Node", Name: "node-a"},
	}
	err := k8s.SubResource("binding").Create(ctx, pod, binding)
	if !apierrors.IsConflict(err) {
		t.Fatalf("bind with a stale resourceVersion: %v, want a conflict", err)
	}
	got := &corev1.Pod{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(pod), got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.NodeName != "" || got.Labels[pub.LifecycleStateKey] != string(pub.LifecycleStatePreparingDelete) {
		t.Errorf("after the refused bind: node %q state %q", got.Spec.NodeName, got.Labels[pub.LifecycleStateKey])
	}
}
