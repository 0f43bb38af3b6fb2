package workload

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestMembers(t *testing.T) {
	ctrl := func(apiVersion, kind, name string) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(kind + "/" + name), Controller: ptr.To(true)}
	}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-7d9", UID: "ReplicaSet/web-7d9",
		OwnerReferences: []metav1.OwnerReference{ctrl("apps/v1", "Deployment", "web")}}}
	other := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-canary-1", UID: "ReplicaSet/web-canary-1",
		OwnerReferences: []metav1.OwnerReference{ctrl("apps/v1", "Deployment", "web-canary")}}}
	c := fake.NewClientBuilder().WithObjects(rs, other).Build()
	pod := func(name string, owner *metav1.OwnerReference) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"app": "web"}}}
		if owner != nil {
			p.OwnerReferences = []metav1.OwnerReference{*owner}
		}
		return p
	}
	ref := func(apiVersion, kind, name string) *metav1.OwnerReference {
		r := ctrl(apiVersion, kind, name)
		return &r
	}
	web1, web2 := pod("web-1", ref("apps/v1", "ReplicaSet", "web-7d9")), pod("web-2", ref("apps/v1", "ReplicaSet", "web-7d9"))
	canary := pod("canary", ref("apps/v1", "ReplicaSet", "web-canary-1"))
	bare := pod("bare", nil)
	cloned := pod("cloned", ref("apps.kruise.io/v1alpha1", "CloneSet", "web"))
	fleetPod := pod("fleet-0", ref("example.dev/v1", "Fleet", "f"))
	shardPod := pod("shard-0", ref("example.dev/v1", "Shard", "f-0"))
	all := []*corev1.Pod{web1, web2, canary, bare, cloned, fleetPod, shardPod}
	cases := []struct {
		name                    string
		apiVersion, kind, name2 string
		want                    []string
	}{
		{"a Deployment: its ReplicaSets' pods only", "apps/v1", "Deployment", "web", []string{"web-1", "web-2"}},
		{"a Deployment whose pods are all gone counts none of the others'", "apps/v1", "Deployment", "gone", nil},
		{"a CloneSet by any version", "apps.kruise.io/v1beta1", "CloneSet", "web", []string{"cloned"}},
		{"a custom kind owning pods: its own", "example.dev/v1", "Fleet", "f", []string{"fleet-0"}},
		{"a custom kind owning none directly: the selector's", "example.dev/v1", "ShardGroup", "f", []string{"web-1", "web-2", "canary", "bare", "cloned", "fleet-0", "shard-0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Members(context.Background(), c, tc.apiVersion, tc.kind, tc.name2, all)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, p := range got {
				names = append(names, p.Name)
			}
			if len(names) != len(tc.want) {
				t.Fatalf("members %v, want %v", names, tc.want)
			}
			for i := range names {
				if names[i] != tc.want[i] {
					t.Fatalf("members %v, want %v", names, tc.want)
				}
			}
		})
	}
}
