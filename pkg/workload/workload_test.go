package workload

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
)

// The three kinds of apps.kruise.io are registered, found by an owner
// reference in either served version and by their Go type, and not by
// another group's kind of the same name.
func TestBuiltinKinds(t *testing.T) {
	if got := Kinds(); len(got) < 3 || got[0].Name != "CloneSet" || got[1].Name != "StatefulSet" || got[2].Name != "DaemonSet" {
		t.Fatalf("kinds %v", got)
	}
	for _, c := range []struct {
		apiVersion, kind string
		want             bool
	}{
		{"apps.kruise.io/v1alpha1", "CloneSet", true}, {"apps.kruise.io/v1beta1", "StatefulSet", true},
		{"apps.kruise.io/v1beta1", "DaemonSet", true}, {"apps/v1", "StatefulSet", false},
		{"apps.kruise.io/v2", "CloneSet", false}, {"apps.kruise.io/v1beta1", "BroadcastJob", false}, {"::", "CloneSet", false},
	} {
		if _, ok := ForOwner(&metav1.OwnerReference{APIVersion: c.apiVersion, Kind: c.kind}); ok != c.want {
			t.Errorf("ForOwner(%s %s) = %v, want %v", c.apiVersion, c.kind, ok, c.want)
		}
	}
	if _, ok := ForOwner(nil); ok {
		t.Error("ForOwner(nil) found a kind")
	}
	if k, ok := Of(&appsv1beta1.DaemonSet{}); !ok || k.Name != "DaemonSet" {
		t.Errorf("Of(DaemonSet) = %v, %v", k, ok)
	}
	if _, err := Register(CloneSet); err == nil {
		t.Error("CloneSet registered twice")
	}
	if _, err := Register(Kind{Group: "example.com", Name: "Half"}); err == nil {
		t.Error("a kind without its readers was registered")
	}
}

// Each kind's view: the CloneSet's defaults (maxUnavailable 20% rounded
// down, at least 1 without surge; partition rounded up), the Advanced
// StatefulSet's and DaemonSet's, whose replicas are the nodes that
// should run a pod.
func TestViews(t *testing.T) {
	cs := &appsv1beta1.CloneSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u1"}}
	cs.Spec.Replicas = ptr.To[int32](10)
	cs.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{FinalizersHandler: []string{"example.com/x"}}}
	cs.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateCloneSetStrategy{Partition: ptr.To(intstr.FromString("25%")), PodUpdatePolicy: "InPlaceIfPossible"}
	v, ok := ReadObject(cs)
	if !ok || v.Kind.Name != "CloneSet" || v.Replicas != 10 || v.MaxUnavailable != 2 || v.Partition != 3 ||
		v.Strategy != "RollingUpdate/InPlaceIfPossible" || v.Lifecycle == nil || v.Ref() != "clone/web" {
		t.Errorf("CloneSet view %+v", v)
	}
	ds := &appsv1beta1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent"}}
	ds.Status.DesiredNumberScheduled = 4
	if v := DaemonSet.View(ds); v.Replicas != 4 || v.MaxUnavailable != 1 || v.LabelSelector().Matches(labels.Set{}) {
		t.Errorf("DaemonSet view %+v", v)
	}
	sts := &appsv1beta1.StatefulSet{}
	sts.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](2), MaxUnavailable: ptr.To(intstr.FromInt32(0))}
	if v := StatefulSet.View(sts); v.Partition != 2 || v.MaxUnavailable != 1 || v.Replicas != 1 {
		t.Errorf("StatefulSet view %+v", v)
	}
}

// A custom kind of OpenKruise's shape is one registration: found by owner
// and by its unstructured objects, and viewed from its fields.
func TestConventionalKind(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Fleet"}
	k := Conventional(gvk, "fleets", "fleet")
	if _, err := Register(k); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Unregister(gvk.GroupKind()) })
	if _, ok := ForOwner(&metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Fleet"}); !ok {
		t.Error("not found by owner")
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Fleet", "metadata": map[string]any{"name": "f", "namespace": "ns", "uid": "u2"},
		"spec": map[string]any{"replicas": int64(4), "selector": map[string]any{"matchLabels": map[string]any{"app": "f"}},
			"lifecycle":      map[string]any{"preDelete": map[string]any{"labelsHandler": map[string]any{"example.com/drain": "true"}}},
			"updateStrategy": map[string]any{"rollingUpdate": map[string]any{"partition": "50%", "paused": true}}},
		"status": map[string]any{"replicas": int64(4), "readyReplicas": int64(3), "updateRevision": "f-2",
			"conditions": []any{map[string]any{"type": "Progressing", "status": "True", "reason": "Rolling"}}},
	}}
	v, ok := ReadObject(u)
	if !ok || v.Kind.Name != "Fleet" || v.Replicas != 4 || v.Partition != 2 || !v.Paused || v.LabelSelector().String() != "app=f" ||
		v.Lifecycle == nil || v.Lifecycle.PreDelete.LabelsHandler["example.com/drain"] != "true" ||
		v.Status.Ready != 3 || v.Status.UpdateRevision != "f-2" || len(v.Conditions) != 1 || v.Conditions[0].Reason != "Rolling" {
		t.Errorf("view %+v", v)
	}
	if _, ok := k.New().(*unstructured.Unstructured); !ok || k.New().GetObjectKind().GroupVersionKind() != gvk {
		t.Errorf("New() = %#v", k.New())
	}
}
