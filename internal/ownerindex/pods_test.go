package ownerindex

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func ownedPod(ns, name, uid string, controller bool) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if uid != "" {
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "cs", UID: types.UID(uid), Controller: ptr.To(controller)}}
	}
	return pod
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	slices.Sort(out)
	return out
}

// Both listers answer alike: the pods whose controller has the UID, in
// the namespace asked for; IndexedPods hands out the indexer's own pods.
func TestOwnedPodsAnswerAlike(t *testing.T) {
	pods := []*corev1.Pod{
		ownedPod("a", "mine-1", "u1", true), ownedPod("a", "mine-2", "u1", true),
		ownedPod("b", "elsewhere", "u1", true), // a reference across namespaces is never adopted
		ownedPod("a", "not-controller", "u1", false),
		ownedPod("a", "other", "u2", true), ownedPod("a", "orphan", "", false),
	}
	indexer := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{podIndex: indexByControllerUID})
	builder := fake.NewClientBuilder().WithIndex(&corev1.Pod{}, Field, ControllerUID)
	for _, p := range pods {
		if err := indexer.Add(p); err != nil {
			t.Fatal(err)
		}
		builder = builder.WithObjects(p.DeepCopy())
	}
	want := []string{"a/mine-1", "a/mine-2"}
	indexed, err := (&IndexedPods{indexer: indexer}).OwnedPods(context.Background(), "a", "u1")
	if err != nil {
		t.Fatal(err)
	}
	if got := names(indexed); !slices.Equal(got, want) {
		t.Errorf("IndexedPods: %v, want %v", got, want)
	}
	for _, p := range indexed {
		if !slices.Contains(pods, p) {
			t.Errorf("IndexedPods handed out a copy of %s, not the cached pod", p.Name)
		}
	}
	listed, err := ListedPods{Reader: builder.Build()}.OwnedPods(context.Background(), "a", "u1")
	if err != nil {
		t.Fatal(err)
	}
	if got := names(listed); !slices.Equal(got, want) {
		t.Errorf("ListedPods: %v, want %v", got, want)
	}
}
