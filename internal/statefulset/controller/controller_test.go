package controller

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/phases/phasestest"
)

// testbed is a Reconciler on a fake client, its shell set up as the
// manager sets it up.
func testbed(t *testing.T, objs ...client.Object) (*Reconciler, client.Client) {
	t.Helper()
	r := &Reconciler{}
	c, _ := phasestest.Fill(t, &r.Shell, &appsv1beta1.StatefulSet{}, objs...)
	r.Init(shellKind, &r.Options.Options)
	return r, c
}

func orderedSet(replicas int32) *appsv1beta1.StatefulSet {
	set := &appsv1beta1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db", UID: "db-uid", Generation: 1}}
	set.Spec.Replicas = ptr.To(replicas)
	set.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
	set.Spec.Template = corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "db:1"}}}}
	return set
}

func reconcileOnce(t *testing.T, r *Reconciler) ctrl.Result {
	t.Helper()
	res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "db"}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func podNames(t *testing.T, c client.Client) []string {
	t.Helper()
	list := &corev1.PodList{}
	if err := c.List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range list.Items {
		out = append(out, p.Name)
	}
	return out
}

// OrderedReady through the shared phases, on fakes: one pod at a time,
// the next only once the one before is Ready, and the status of the step
// that creates a pod counts it (one status write, not a second one once
// the cache shows the pod).
func TestOrderedReadyScaleUp(t *testing.T) {
	r, c := testbed(t, orderedSet(2))
	reconcileOnce(t, r)
	if names := podNames(t, c); len(names) != 1 || names[0] != "db-0" {
		t.Fatalf("pods after the first step: %v, want db-0 only", names)
	}
	set := &appsv1beta1.StatefulSet{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "db"}, set); err != nil {
		t.Fatal(err)
	}
	if set.Status.Replicas != 1 || set.Status.ObservedGeneration != 1 || set.Status.UpdateRevision == "" {
		t.Errorf("status after the step that created db-0: %+v", set.Status)
	}
	written := set.ResourceVersion

	// The API server makes a new pod Pending (the fake client does not):
	// db-0 not Ready, nothing more, and the status is not written again.
	pod := &corev1.Pod{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "db-0"}, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodPending
	if err := c.Status().Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	reconcileOnce(t, r)
	if names := podNames(t, c); len(names) != 1 {
		t.Fatalf("pods while db-0 is not Ready: %v", names)
	}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "db"}, set); err != nil {
		t.Fatal(err)
	}
	if set.ResourceVersion != written {
		t.Errorf("status written again with nothing changed: %+v", set.Status)
	}

	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if err := c.Status().Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	reconcileOnce(t, r)
	if names := podNames(t, c); len(names) != 2 {
		t.Fatalf("pods once db-0 is Ready: %v, want db-0 and db-1", names)
	}
}
