package conversion

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
)

// TestStatefulSetV1alpha1EditKeepsV1beta1Fields is openkruise/kruise#2102:
// an editor reads a set through v1alpha1, changes replicas and writes it
// back. OpenKruise's conversion erased reserveOrdinals on the way, so the
// set deleted its highest ordinals instead of the reserved ones. Every
// v1beta1-only spec field must come back.
func TestStatefulSetV1alpha1EditKeepsV1beta1Fields(t *testing.T) {
	stored := &appsv1beta1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", Annotations: map[string]string{"team": "data"}},
		Spec: appsv1beta1.StatefulSetSpec{
			Replicas:                  ptr.To[int32](8),
			PodManagementPolicy:       appsv1.ParallelPodManagement,
			ReserveOrdinals:           []intstr.IntOrString{intstr.FromInt32(2), intstr.FromString("4-5")},
			Lifecycle:                 &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{"example.com/drain": "true"}, MarkPodNotReady: true}},
			ScaleStrategy:             &appsv1beta1.StatefulSetScaleStrategy{MaxUnavailable: ptr.To(intstr.FromString("25%"))},
			Ordinals:                  &appsv1beta1.StatefulSetOrdinals{Start: 3},
			VolumeClaimUpdateStrategy: appsv1beta1.VolumeClaimUpdateStrategy{Type: appsv1beta1.OnPVCDeleteVolumeClaimUpdateStrategyType},
			PersistentVolumeClaimRetentionPolicy: &appsv1beta1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1beta1.DeletePersistentVolumeClaimRetentionPolicyType, WhenScaled: appsv1beta1.RetainPersistentVolumeClaimRetentionPolicyType,
			},
			UpdateStrategy: appsv1beta1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1beta1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](2), MaxUnavailable: ptr.To(intstr.FromInt32(3))}},
		},
	}
	read := &appsv1alpha1.StatefulSet{}
	if err := StatefulSetFromHub(stored, read); err != nil {
		t.Fatal(err)
	}
	if read.Annotations[StashAnnotation] == "" {
		t.Fatalf("the v1alpha1 form keeps nothing of the v1beta1-only fields: %v", read.Annotations)
	}
	read.Spec.Replicas = ptr.To[int32](6) // the edit
	written := &appsv1beta1.StatefulSet{}
	if err := StatefulSetToHub(read, written); err != nil {
		t.Fatal(err)
	}
	want := stored.DeepCopy()
	want.Spec.Replicas = ptr.To[int32](6)
	if !apiequality.Semantic.DeepEqual(want, written) {
		t.Fatalf("the v1alpha1 edit changed more than replicas:\n%s", objectDiff(want, written))
	}
	if _, ok := written.Annotations[StashAnnotation]; ok {
		t.Fatal("the stored object carries the stash annotation")
	}
}

// TestStatefulSetWithoutV1beta1FieldsHasNoStash: a set that uses none of
// the v1beta1-only fields reads through v1alpha1 exactly as OpenKruise's
// conversion gives it, with no annotation added.
func TestStatefulSetWithoutV1beta1FieldsHasNoStash(t *testing.T) {
	stored := &appsv1beta1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Spec: appsv1beta1.StatefulSetSpec{Replicas: ptr.To[int32](1)}}
	read := &appsv1alpha1.StatefulSet{}
	if err := StatefulSetFromHub(stored, read); err != nil {
		t.Fatal(err)
	}
	if read.Annotations != nil {
		t.Fatalf("annotations %v, want none", read.Annotations)
	}
}
