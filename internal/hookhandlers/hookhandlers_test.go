package hookhandlers

import (
	"reflect"
	"testing"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
)

func TestData(t *testing.T) {
	web := &pub.Lifecycle{
		PreDelete:     &pub.LifecycleHook{LabelsHandler: map[string]string{"example.io/registered": "true"}, FinalizersHandler: []string{"example.io/drain"}},
		InPlaceUpdate: &pub.LifecycleHook{LabelsHandler: map[string]string{"example.io/registered": "true"}},
	}
	db := &pub.Lifecycle{PreNormal: &pub.LifecycleHook{LabelsHandler: map[string]string{"db.io/ready": "true"}}}
	got := Data(map[string][]*pub.Lifecycle{
		"shop":  {web, db},
		"quiet": {{}, nil},
	})
	want := map[string]string{"shop": "finalizer:example.io/drain,label:db.io/ready,label:example.io/registered"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Data = %v, want %v (a namespace without handlers has no key)", got, want)
	}
}
