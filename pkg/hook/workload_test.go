package hook

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/pkg/workload"
)

// statefulSetWorld is an Advanced StatefulSet, labelled tier=db, with
// seed 001's inPlaceUpdate hook and one pod held for its update.
func statefulSetWorld(t *testing.T) (client.Client, *corev1.Pod) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	sts := &appsv1beta1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", UID: "sts-uid", Labels: map[string]string{"tier": "db"}}}
	sts.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	sts.Spec.Lifecycle = &pub.Lifecycle{InPlaceUpdate: &pub.LifecycleHook{LabelsHandler: map[string]string{registered: "true"}}}
	p := pod(pub.LifecycleStatePreparingUpdate, true, label(registered, "true"))
	p.Name, p.Namespace = "db-0", "ns"
	p.Labels["app"] = "web"
	// OpenKruise made it: its owner reference names v1beta1.
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1beta1", Kind: "StatefulSet", Name: "db", UID: "sts-uid", Controller: ptrTrue()}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(sts, p).Build()
	return c, p
}

// An operator that follows Advanced StatefulSets handles their pods with
// the same handlers, the event naming the set; one that follows CloneSets
// only (the default), or other StatefulSets, leaves them alone.
func TestFollowsAdvancedStatefulSets(t *testing.T) {
	tierDB, _ := labels.Parse("tier=db")
	tierWeb, _ := labels.Parse("tier=web")
	for _, tc := range []struct {
		name   string
		follow []Follow
		// kind: the pod passes the watch's predicate (by kind only);
		// want: it is handled.
		kind, want bool
	}{
		{"default: CloneSets only", nil, false, false},
		{"StatefulSets", []Follow{{Kind: KindCloneSet}, {Kind: KindStatefulSet}}, true, true},
		{"StatefulSets tier=db", []Follow{{Kind: KindStatefulSet, Selector: tierDB}}, true, true},
		{"StatefulSets tier=web", []Follow{{Kind: KindStatefulSet, Selector: tierWeb}}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, p := statefulSetWorld(t)
			var got []Event
			op := newOperator(c, Handlers{BeforeUpdate: func(_ context.Context, e Event) error { got = append(got, e); return nil }}, Options{Follow: tc.follow})
			if op.ownedByFollowed(p) != tc.kind {
				t.Errorf("pod predicate says %v, want %v", !tc.kind, tc.kind)
			}
			if _, err := op.Reconcile(context.Background(), request(p)); err != nil {
				t.Fatal(err)
			}
			after := &corev1.Pod{}
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(p), after); err != nil {
				t.Fatal(err)
			}
			if !tc.want {
				if len(got) != 0 || after.Labels[registered] != "true" {
					t.Fatalf("a pod not followed was handled: %d calls, label %q", len(got), after.Labels[registered])
				}
				return
			}
			if len(got) != 1 || got[0].Workload.Kind != KindStatefulSet || got[0].Workload.Name() != "db" || got[0].CloneSet != nil {
				t.Fatalf("events %+v", got)
			}
			if after.Labels[registered] != "false" {
				t.Errorf("hook not released: %q", after.Labels[registered])
			}
			reqs := op.podsOf(context.Background(), got[0].Workload.Object)
			if len(reqs) != 1 || reqs[0].Name != "db-0" {
				t.Errorf("the set maps to %v, want its pod", reqs)
			}
		})
	}
}

func TestValidateFollow(t *testing.T) {
	if err := ValidateFollow([]Follow{{Kind: KindCloneSet}, {Kind: KindStatefulSet}, {Kind: KindDaemonSet}}); err != nil {
		t.Error(err)
	}
	if err := ValidateFollow([]Follow{{Kind: "Deployment"}}); err == nil {
		t.Error("an unknown kind was accepted")
	}
	if err := ValidateFollow([]Follow{{Kind: KindCloneSet}, {Kind: KindCloneSet}}); err == nil {
		t.Error("a kind followed twice was accepted")
	}
}

// An operator that follows Advanced DaemonSets handles their pods' preDelete
// hook with the same handler, the event naming the set.
func TestFollowsAdvancedDaemonSets(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ds := &appsv1beta1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "ns", UID: "ds-uid"}}
	ds.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}}
	ds.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{registered: "true"}}}
	p := pod(pub.LifecycleStatePreparingDelete, false, label(registered, "true"))
	p.Name, p.Namespace = "agent-x7k2p", "ns"
	p.Labels["app"] = "agent"
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1beta1", Kind: "DaemonSet", Name: "agent", UID: "ds-uid", Controller: ptrTrue()}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(ds, p).Build()
	var got []Event
	op := newOperator(c, Handlers{BeforeDelete: func(_ context.Context, e Event) error { got = append(got, e); return nil }},
		Options{Follow: []Follow{{Kind: KindDaemonSet}}})
	if !op.ownedByFollowed(p) {
		t.Fatal("the pod predicate leaves a followed DaemonSet's pod out")
	}
	if _, err := op.Reconcile(context.Background(), request(p)); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Workload.Kind != KindDaemonSet || got[0].Workload.Name() != "agent" {
		t.Fatalf("events %+v", got)
	}
	after := &corev1.Pod{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(p), after); err != nil {
		t.Fatal(err)
	}
	if after.Labels[registered] == "true" {
		t.Errorf("hook not released: %q", after.Labels[registered])
	}
}

// A custom kind registered once (pkg/workload.Register) is followed like
// the built-in ones: its pods' hooks are handled and released, and the
// event carries the workload read unstructured.
func TestFollowsARegisteredCustomKind(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Fleet"}
	if _, err := workload.Register(workload.Conventional(gvk, "fleets", "fleet")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { workload.Unregister(gvk.GroupKind()) })
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	fleet := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Fleet",
		"metadata": map[string]any{"name": "ships", "namespace": "ns", "uid": "fleet-uid"},
		"spec": map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "ship"}},
			"lifecycle": map[string]any{"preDelete": map[string]any{"labelsHandler": map[string]any{registered: "true"}}}}}}
	p := pod(pub.LifecycleStatePreparingDelete, false, label(registered, "true"))
	p.Name, p.Namespace = "ships-0", "ns"
	p.Labels["app"] = "ship"
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Fleet", Name: "ships", UID: "fleet-uid", Controller: ptrTrue()}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(fleet, p).Build()
	if !slices.Contains(Kinds(), "Fleet.example.com") {
		t.Fatalf("kinds %v: want Fleet.example.com", Kinds())
	}
	var got []Event
	op := newOperator(c, Handlers{BeforeDelete: func(_ context.Context, e Event) error { got = append(got, e); return nil }},
		Options{Follow: []Follow{{Kind: "Fleet.example.com"}}})
	if _, err := op.Reconcile(context.Background(), request(p)); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Workload.Kind != "Fleet.example.com" || got[0].Workload.Name() != "ships" || got[0].Workload.Lifecycle == nil {
		t.Fatalf("events %+v", got)
	}
	after := &corev1.Pod{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(p), after); err != nil {
		t.Fatal(err)
	}
	if after.Labels[registered] != "false" {
		t.Errorf("hook not released: %q", after.Labels[registered])
	}
	if reqs := op.podsOf(context.Background(), fleet); len(reqs) != 1 || reqs[0].Name != "ships-0" {
		t.Errorf("the fleet maps to %v, want its pod", reqs)
	}
	ws, err := ListWorkloads(context.Background(), c, []Follow{{Kind: "Fleet.example.com"}}, "ns")
	if err != nil || len(ws) != 1 || ws[0].Name() != "ships" || ws[0].Kind != "Fleet.example.com" {
		t.Errorf("ListWorkloads = %+v, %v; want the fleet", ws, err)
	}
}
