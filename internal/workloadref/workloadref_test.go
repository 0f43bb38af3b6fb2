package workloadref

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

func TestIs(t *testing.T) {
	sts := schema.GroupKind{Group: "apps", Kind: "StatefulSet"}
	cases := []struct {
		ref  Ref
		want bool
	}{
		{Ref{"apps/v1", "StatefulSet", "db"}, true},
		{Ref{"apps/v1beta2", "StatefulSet", "db"}, true},
		{Ref{"apps/v1", "StatefulSet", "other"}, false},
		{Ref{"apps.kruise.io/v1beta1", "StatefulSet", "db"}, false},
		{Ref{"apps/v1", "Deployment", "db"}, false},
		{Ref{"a/b/c", "StatefulSet", "db"}, false},
	}
	for _, c := range cases {
		if got := c.ref.Is(sts, "db"); got != c.want {
			t.Errorf("%+v.Is(apps StatefulSet db) = %v, want %v", c.ref, got, c.want)
		}
	}
	owner := Owner(metav1.OwnerReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "CloneSet", Name: "web"})
	if !Same(Ref{"apps.kruise.io/v1alpha1", "CloneSet", "web"}, owner) || Same(Ref{"apps/v1", "CloneSet", "web"}, owner) {
		t.Error("Same ignores the version and nothing else")
	}
}

func TestReplicasDefaultsToOne(t *testing.T) {
	if Replicas(nil) != 1 || Replicas(ptr.To[int32](0)) != 0 || Replicas(ptr.To[int32](7)) != 7 {
		t.Error("unset replicas is 1; a set value is kept, 0 included")
	}
}
