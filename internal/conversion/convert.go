package conversion

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	policyv1beta1 "github.com/lifeline-k8s/lifeline/api/policy/v1beta1"
)

// Convert converts src into dst, which must be the same kind in the other
// version; the conversion webhook and the tests go through it.
func Convert(src, dst runtime.Object) error {
	switch s := src.(type) {
	case *appsv1alpha1.CloneSet:
		if d, ok := dst.(*appsv1beta1.CloneSet); ok {
			return CloneSetToHub(s, d)
		}
	case *appsv1beta1.CloneSet:
		if d, ok := dst.(*appsv1alpha1.CloneSet); ok {
			return CloneSetFromHub(s, d)
		}
	case *policyv1alpha1.PodUnavailableBudget:
		if d, ok := dst.(*policyv1beta1.PodUnavailableBudget); ok {
			return PodUnavailableBudgetToHub(s, d)
		}
	case *policyv1beta1.PodUnavailableBudget:
		if d, ok := dst.(*policyv1alpha1.PodUnavailableBudget); ok {
			return PodUnavailableBudgetFromHub(s, d)
		}
	case *appsv1alpha1.PersistentPodState:
		if d, ok := dst.(*appsv1beta1.PersistentPodState); ok {
			return PersistentPodStateToHub(s, d)
		}
	case *appsv1beta1.PersistentPodState:
		if d, ok := dst.(*appsv1alpha1.PersistentPodState); ok {
			return PersistentPodStateFromHub(s, d)
		}
	case *appsv1alpha1.StatefulSet:
		if d, ok := dst.(*appsv1beta1.StatefulSet); ok {
			return StatefulSetToHub(s, d)
		}
	case *appsv1beta1.StatefulSet:
		if d, ok := dst.(*appsv1alpha1.StatefulSet); ok {
			return StatefulSetFromHub(s, d)
		}
	case *appsv1alpha1.DaemonSet:
		if d, ok := dst.(*appsv1beta1.DaemonSet); ok {
			return DaemonSetToHub(s, d)
		}
	case *appsv1beta1.DaemonSet:
		if d, ok := dst.(*appsv1alpha1.DaemonSet); ok {
			return DaemonSetFromHub(s, d)
		}
	}
	return fmt.Errorf("no conversion from %T to %T", src, dst)
}
