package revision

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestTemplateNamingCollides: a DaemonSet's revision is named as the
// native DaemonSet names it (the template's hash, no collision count until
// a collision), labelled controller-revision-hash; a name another
// revision's data holds is a collision, which the set's own count
// resolves, touching no other object.
func TestTemplateNamingCollides(t *testing.T) {
	ds := &metav1.ObjectMeta{Namespace: "ns", Name: "agent", UID: "ds-uid"}
	tmpl := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "agent:1"}}}}
	src := Source{Owner: ds, Kind: schema.GroupVersionKind{Group: "apps.kruise.io", Version: "v1beta1", Kind: "DaemonSet"},
		Template: tmpl, Naming: TemplateNaming}
	revs, err := Plan(src, nil)
	if err != nil {
		t.Fatal(err)
	}
	hash := PodTemplateHash(tmpl, nil)
	if cr := revs.Update; !revs.Create || cr.Name != "agent-"+hash || cr.Labels[appsv1.ControllerRevisionHashLabelKey] != hash || cr.Labels[HashLabel] != "" {
		t.Fatalf("planned %s (create %v), labels %v; want agent-%s", cr.Name, revs.Create, cr.Labels, hash)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	squatter := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "agent-" + hash}, Data: runtime.RawExtension{Raw: []byte(`{"other":true}`)}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(squatter).Build()
	store := Store{Client: c, Live: c}
	if err := store.Write(context.Background(), src, &revs); err != nil {
		t.Fatal(err)
	}
	if revs.CollisionCount != 1 || revs.Update.Name != "agent-"+PodTemplateHash(tmpl, &revs.CollisionCount) {
		t.Fatalf("after the collision: count %d, revision %s", revs.CollisionCount, revs.Update.Name)
	}
}
