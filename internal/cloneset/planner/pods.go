package planner

import (
	corev1 "k8s.io/api/core/v1"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
)

// IsSpecifiedDelete reports whether someone asked for the pod's deletion:
// the specified-delete label, or its name in scaleStrategy.podsToDelete.
func IsSpecifiedDelete(pod *corev1.Pod, podsToDelete map[string]bool) bool {
	_, labelled := pod.Labels[appsv1alpha1.SpecifiedDeleteKey]
	return labelled || podsToDelete[pod.Name]
}
