package phases

import (
	"context"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	crfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1beta1 "github.com/lifeline-k8s/lifeline/api/policy/v1beta1"
)

var (
	cloneSets    = schema.GroupKind{Group: "apps.kruise.io", Kind: "CloneSet"}
	statefulSets = schema.GroupKind{Group: "apps.kruise.io", Kind: "StatefulSet"}
)

// A budget's change wakes the workloads of the kind whose pods it covers,
// and only those: by targetRef (any version of the kind), or as the
// controller of a pod its selector matches in its namespace.
func TestWakeCovered(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	pod := func(ns, name, app, apiVersion, kind, owner string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: owner, UID: types.UID("u-" + owner), Controller: ptr.To(true)}}}}
	}
	c := crfake.NewClientBuilder().WithScheme(scheme).WithObjects(
		pod("a", "web-1", "web", "apps.kruise.io/v1alpha1", "CloneSet", "web"),
		pod("a", "web-2", "web", "apps.kruise.io/v1beta1", "CloneSet", "web"),
		pod("a", "other-1", "other", "apps.kruise.io/v1alpha1", "CloneSet", "other"),
		pod("a", "deploy-1", "web", "apps/v1", "ReplicaSet", "web-5d8f"),
		pod("a", "db-0", "web", "apps.kruise.io/v1beta1", "StatefulSet", "db"),
		pod("b", "far-1", "web", "apps.kruise.io/v1alpha1", "CloneSet", "far"),
	).Build()
	selecting := func(labels map[string]string) policyv1beta1.PodUnavailableBudgetSpec {
		return policyv1beta1.PodUnavailableBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}}
	}
	targeting := func(apiVersion, kind, name string) policyv1beta1.PodUnavailableBudgetSpec {
		return policyv1beta1.PodUnavailableBudgetSpec{TargetReference: &policyv1beta1.TargetReference{APIVersion: apiVersion, Kind: kind, Name: name}}
	}
	for _, tc := range []struct {
		name string
		kind schema.GroupKind
		spec policyv1beta1.PodUnavailableBudgetSpec
		want []string
	}{
		{"selector, CloneSets", cloneSets, selecting(map[string]string{"app": "web"}), []string{"a/web"}},
		{"selector, StatefulSets", statefulSets, selecting(map[string]string{"app": "web"}), []string{"a/db"}},
		{"selector matching no pod", cloneSets, selecting(map[string]string{"app": "none"}), nil},
		{"empty selector", cloneSets, selecting(nil), nil},
		{"no selector, no target", cloneSets, policyv1beta1.PodUnavailableBudgetSpec{}, nil},
		{"targetRef of another version", cloneSets, targeting("apps.kruise.io/v1beta1", "CloneSet", "web"), []string{"a/web"}},
		{"targetRef of another kind", cloneSets, targeting("apps/v1", "Deployment", "web"), nil},
		{"targetRef of another group", statefulSets, targeting("apps/v1", "StatefulSet", "db"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := WakeCovered(c, tc.kind)
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			defer q.ShutDown()
			h.Create(context.Background(), event.CreateEvent{Object: &policyv1beta1.PodUnavailableBudget{
				ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "pub"}, Spec: tc.spec}}, q)
			var got []string
			for q.Len() > 0 {
				r, _ := q.Get()
				got = append(got, r.String())
				q.Done(r)
			}
			sort.Strings(got)
			if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
				t.Errorf("woke %v, want %v", got, tc.want)
			}
		})
	}
}

// Only a change that may let a held pod go passes: spending room (an
// admission's record) and recounts that give none pass nothing.
func TestRoomGained(t *testing.T) {
	base := policyv1beta1.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Generation: 1, Annotations: map[string]string{"a": "1"}},
		Status: policyv1beta1.PodUnavailableBudgetStatus{UnavailableAllowed: 1, DesiredAvailable: 4, CurrentAvailable: 5,
			DisruptedPods: map[string]metav1.Time{"p1": {}}}}
	for _, tc := range []struct {
		name   string
		change func(b *policyv1beta1.PodUnavailableBudget)
		want   bool
	}{
		{"nothing", func(*policyv1beta1.PodUnavailableBudget) {}, false},
		{"room spent by a record", func(b *policyv1beta1.PodUnavailableBudget) {
			b.Status.UnavailableAllowed = 0
			b.Status.UnavailablePods = map[string]metav1.Time{"p2": {}}
		}, false},
		{"a recount giving no room", func(b *policyv1beta1.PodUnavailableBudget) { b.Status.CurrentAvailable = 4 }, false},
		{"more allowed", func(b *policyv1beta1.PodUnavailableBudget) { b.Status.UnavailableAllowed = 2 }, true},
		{"a record withdrawn", func(b *policyv1beta1.PodUnavailableBudget) { b.Status.DisruptedPods = nil }, true},
		{"spec changed", func(b *policyv1beta1.PodUnavailableBudget) { b.Generation = 2 }, true},
		{"annotations changed", func(b *policyv1beta1.PodUnavailableBudget) { b.Annotations = nil }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur := base.DeepCopy()
			tc.change(cur)
			if got := RoomGained().Update(event.UpdateEvent{ObjectOld: base.DeepCopy(), ObjectNew: cur}); got != tc.want {
				t.Errorf("passed %v, want %v", got, tc.want)
			}
		})
	}
	if !RoomGained().Create(event.CreateEvent{Object: base.DeepCopy()}) || !RoomGained().Delete(event.DeleteEvent{Object: base.DeepCopy()}) {
		t.Error("a budget created or deleted must pass")
	}
}
