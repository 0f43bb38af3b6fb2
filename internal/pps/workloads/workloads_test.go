package workloads

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
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
