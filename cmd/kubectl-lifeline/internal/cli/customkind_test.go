package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/lifeline-k8s/lifeline/cmd/kubectl-lifeline/internal/diagnose"
	"github.com/lifeline-k8s/lifeline/pkg/workload"
)

// A custom kind registered once (pkg/workload.Register) gets the status
// view with no other edit: the plugin resolves it, reads it and its pods,
// and finds the kind of a pod's controller.
func TestStatusOfARegisteredCustomKind(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Fleet"}
	if _, err := workload.Register(workload.Conventional(gvk, "fleets", "fleet")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { workload.Unregister(gvk.GroupKind()) })
	fleet := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Fleet",
		"metadata": map[string]any{"name": "ships", "namespace": "ns", "uid": "fleet-uid", "generation": int64(2)},
		"spec":     map[string]any{"replicas": int64(2), "selector": map[string]any{"matchLabels": map[string]any{"app": "ship"}}},
		"status":   map[string]any{"observedGeneration": int64(2), "replicas": int64(2), "updateRevision": "ships-2"}}}
	pod := func(name, revision string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns",
			Labels:          map[string]string{"app": "ship", "controller-revision-hash": revision},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Fleet", Name: "ships", UID: "fleet-uid", Controller: ptr.To(true)}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	}
	s := &session{c: fake.NewClientBuilder().WithScheme(scheme()).WithObjects(fleet, pod("ships-a", "ships-2"), pod("ships-b", "ships-1")).Build(),
		namespace: "ns", now: func() time.Time { return time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC) }}
	k, err := workloadKind(target{GroupKind: gvk.GroupKind(), Name: "ships"})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := s.readWorkload(context.Background(), k, "ships")
	if err != nil {
		t.Fatal(err)
	}
	v := diagnose.Status(snap)
	if v.Workload != "fleet/ships" || v.Progress.Pods != 2 || v.Progress.Updated != 1 || v.Done {
		t.Errorf("status %+v", v)
	}
	if k, name, ok := ownerKind(pod("ships-a", "ships-2")); !ok || k.Name != "Fleet" || name != "ships" {
		t.Errorf("ownerKind = %v %q %v", k, name, ok)
	}
	if _, err := workloadKind(target{GroupKind: schema.GroupKind{Group: "apps", Kind: "Deployment"}, Name: "x"}); err == nil || !strings.Contains(err.Error(), "Fleet (fleet)") {
		t.Errorf("an unknown kind: %v, want the registered kinds listed", err)
	}
}
