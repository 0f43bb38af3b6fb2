package revision

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Templates reads every revision's template and the update revision's,
// by the caller's key, leaves out what holds none, and never writes into
// the caller's list (an append to All could have).
func TestTemplates(t *testing.T) {
	cr := func(name, data string) *appsv1.ControllerRevision {
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: runtime.RawExtension{Raw: []byte(data)}}
	}
	all := make([]*appsv1.ControllerRevision, 2, 3)
	all[0] = cr("web-1", `{"spec":{"template":{"metadata":{"labels":{"v":"1"}}}}}`)
	all[1] = cr("web-bad", `not json`)
	spare := all[:3]
	r := Revisions{All: all, Update: cr("web-2", `{"spec":{"template":{"metadata":{"labels":{"v":"2"}}}}}`)}
	got := r.Templates(func(c *appsv1.ControllerRevision) string { return c.Name })
	if len(got) != 2 || got["web-1"].Labels["v"] != "1" || got["web-2"].Labels["v"] != "2" {
		t.Errorf("templates %v", got)
	}
	if spare[2] != nil {
		t.Error("the caller's list was written into")
	}
}
