package workload

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestGone(t *testing.T) {
	rs := func(name string, uid types.UID, deleting bool) *appsv1.ReplicaSet {
		r := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid}}
		if deleting {
			now := metav1.Now()
			r.DeletionTimestamp = &now
			r.Finalizers = []string{"foregroundDeletion"}
		}
		return r
	}
	ref := func(name string, uid types.UID) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name, UID: uid}
	}
	reader := func(objs ...client.Object) client.Reader { return fake.NewClientBuilder().WithObjects(objs...).Build() }
	cases := []struct {
		name        string
		cache, live client.Reader
		ref         metav1.OwnerReference
		gone        bool
	}{
		{"there", reader(rs("web", "a", false)), reader(rs("web", "a", false)), ref("web", "a"), false},
		{"being deleted", reader(rs("web", "a", true)), reader(rs("web", "a", true)), ref("web", "a"), true},
		{"gone", reader(), reader(), ref("web", "a"), true},
		{"not in the cache yet, but there", reader(), reader(rs("web", "a", false)), ref("web", "a"), false},
		{"replaced by a same-named one", reader(rs("web", "b", false)), reader(rs("web", "b", false)), ref("web", "a"), true},
		{"a kind that cannot be read", reader(), reader(), metav1.OwnerReference{APIVersion: "not a version/x/y", Kind: "Fleet", Name: "f"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Gone(context.Background(), c.cache, c.live, "ns", c.ref); got != c.gone {
				t.Errorf("Gone = %v, want %v", got, c.gone)
			}
		})
	}
}
