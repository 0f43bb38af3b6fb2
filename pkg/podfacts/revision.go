package podfacts

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// ShortHash is the part of a revision name after its last dash: what the
// pod-template-hash label holds, and what revisions are compared by, so a
// pod labelled with either the full name or the short hash matches.
func ShortHash(name string) string {
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '-' {
			return name[i+1:]
		}
	}
	return name
}

// AtRevision reports whether the pod is at the named revision: its
// controller-revision-hash label names it in full or by its short hash.
func AtRevision(pod *corev1.Pod, revisionName string) bool {
	v := pod.Labels[appsv1.ControllerRevisionHashLabelKey]
	return v != "" && ShortHash(v) == ShortHash(revisionName)
}
