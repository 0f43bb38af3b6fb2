package revision

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// The vector OpenKruise's own code gives (reference §3.8): a template of one
// container, no defaults, collision count 0.
func TestRevisionMatchesOpenKruiseVector(t *testing.T) {
	cs := &appsv1alpha1.CloneSet{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "default", UID: "uid-1"}}
	cs.Spec.Template = corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "demo"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:alpine"}}},
	}
	data, err := Data(cs)
	if err != nil {
		t.Fatal(err)
	}
	const wantData = `{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":null,"labels":{"app":"demo"}},"spec":{"containers":[{"image":"nginx:alpine","name":"main","resources":{}}]}}}}`
	if string(data) != wantData {
		t.Fatalf("data:\n got %s\nwant %s", data, wantData)
	}
	if got := Hash(data, ptr.To[int32](0)); got != "c97894f48" {
		t.Errorf("hash %s, want c97894f48", got)
	}

	cr, err := New(cs, ptr.To[int32](0), 3)
	if err != nil {
		t.Fatal(err)
	}
	if cr.Name != "demo-c97894f48" || cr.Revision != 3 || cr.Labels["controller.kubernetes.io/hash"] != "c97894f48" || cr.Labels["app"] != "demo" ||
		cr.Annotations[appsv1alpha1.VolumeClaimTemplatesHashAnnotation] != "" {
		t.Errorf("revision: name %s, number %d, labels %v, annotations %v", cr.Name, cr.Revision, cr.Labels, cr.Annotations)
	}
	if ref := metav1.GetControllerOf(cr); ref == nil || ref.UID != "uid-1" || ref.Kind != "CloneSet" || ref.APIVersion != "apps.kruise.io/v1beta1" {
		t.Errorf("owner: %+v", ref)
	}
}

func TestCollisionCountChangesTheHash(t *testing.T) {
	data := []byte(`{"spec":{}}`)
	if Hash(data, ptr.To[int32](0)) == Hash(data, ptr.To[int32](1)) {
		t.Error("collision count 0 and 1 give the same hash")
	}
}

func TestNameAndShortHash(t *testing.T) {
	long := make([]byte, 300)
	for i := range long {
		long[i] = 'a'
	}
	if n := Name(string(long), "abc"); len(n) != 223+4 || podfacts.ShortHash(n) != "abc" {
		t.Errorf("long name %d chars, short hash %s", len(n), podfacts.ShortHash(n))
	}
}
