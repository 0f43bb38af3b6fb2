package workloads

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
)

// The whitelist as OpenKruise's e2e writes it (capitalised keys).
func TestParse(t *testing.T) {
	got, err := Parse(`{"workloads":[{"Group":"apps.kruise.io","Version":"v1beta1","Kind":"StatefulSetLikeTest"}]}`)
	if err != nil || !reflect.DeepEqual(got, []schema.GroupKind{{Group: "apps.kruise.io", Kind: "StatefulSetLikeTest"}}) {
		t.Errorf("%v %v", got, err)
	}
	if got, err := Parse(""); err != nil || got != nil {
		t.Errorf("empty: %v %v", got, err)
	}
	if _, err := Parse("{"); err == nil {
		t.Error("malformed JSON accepted")
	}
}

func TestTargets(t *testing.T) {
	sts := schema.GroupKind{Group: "apps", Kind: "StatefulSet"}
	ref := appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db"}
	if !Targets(ref, sts, "db") || Targets(ref, sts, "other") || Targets(ref, schema.GroupKind{Group: "apps.kruise.io", Kind: "StatefulSet"}, "db") {
		t.Error("group, kind and name decide")
	}
	if ref.APIVersion = "apps/v1beta2"; !Targets(ref, sts, "db") {
		t.Error("the version must not matter")
	}
	if !IsStatefulSet(sts) || !IsAdvanced(schema.GroupKind{Group: "apps.kruise.io", Kind: "StatefulSet"}) || IsStatefulSet(schema.GroupKind{Group: "apps", Kind: "Deployment"}) {
		t.Error("kinds")
	}
}
