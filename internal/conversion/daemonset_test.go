package conversion

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
)

// TestDaemonSetPartitionedScalingAcrossV1alpha1Writes: v1alpha1 says
// partitionedScaling with an annotation that OpenKruise's conversion sets
// and never removes, so once a set had it, every v1alpha1 write turned it
// back on. A v1alpha1 write keeps what v1beta1 says unless the writer
// changed the annotation.
func TestDaemonSetPartitionedScalingAcrossV1alpha1Writes(t *testing.T) {
	progressive := func(v string) map[string]string {
		if v == "-" {
			return nil
		}
		return map[string]string{appsv1alpha1.ProgressiveCreatePodAnnotation: v}
	}
	cases := []struct {
		name       string
		stored     *appsv1beta1.DaemonSetScaleStrategy
		annotation string // on the stored object; "-" for none
		edit       func(map[string]string) map[string]string
		want       *appsv1beta1.DaemonSetScaleStrategy
	}{
		{"turned off in v1beta1, annotation left behind", &appsv1beta1.DaemonSetScaleStrategy{}, "true", nil, &appsv1beta1.DaemonSetScaleStrategy{}},
		{"on", &appsv1beta1.DaemonSetScaleStrategy{PartitionedScaling: true}, "-", nil, &appsv1beta1.DaemonSetScaleStrategy{PartitionedScaling: true}},
		{"unset", nil, "-", nil, nil},
		{"unset, annotation left behind", nil, "true", nil, nil},
		{"off, then on through v1alpha1", &appsv1beta1.DaemonSetScaleStrategy{}, "-",
			func(map[string]string) map[string]string { return progressive("true") }, &appsv1beta1.DaemonSetScaleStrategy{PartitionedScaling: true}},
		{"on, then off through v1alpha1", &appsv1beta1.DaemonSetScaleStrategy{PartitionedScaling: true}, "-",
			func(a map[string]string) map[string]string {
				delete(a, appsv1alpha1.ProgressiveCreatePodAnnotation)
				return a
			}, nil},
		{"annotation changed to false", &appsv1beta1.DaemonSetScaleStrategy{}, "true",
			func(a map[string]string) map[string]string {
				a[appsv1alpha1.ProgressiveCreatePodAnnotation] = "false"
				return a
			}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stored := &appsv1beta1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Annotations: progressive(c.annotation)},
				Spec: appsv1beta1.DaemonSetSpec{ScaleStrategy: c.stored}}
			read := &appsv1alpha1.DaemonSet{}
			if err := DaemonSetFromHub(stored, read); err != nil {
				t.Fatal(err)
			}
			if c.edit != nil {
				read.Annotations = c.edit(read.Annotations)
			}
			written := &appsv1beta1.DaemonSet{}
			if err := DaemonSetToHub(read, written); err != nil {
				t.Fatal(err)
			}
			if !sameScaleStrategy(written.Spec.ScaleStrategy, c.want) {
				t.Fatalf("scaleStrategy %+v, want %+v", written.Spec.ScaleStrategy, c.want)
			}
			if _, ok := written.Annotations[StashAnnotation]; ok {
				t.Fatal("the stored object carries the stash annotation")
			}
		})
	}
}
