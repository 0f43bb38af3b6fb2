// Package lifecycle holds the pure rules of lifecycle hooks: whether a pod is
// held by a hook, and which state it moves to.
package lifecycle

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
)

// IsHooked reports whether any handler of the hook is on the pod: any of
// its finalizers, or any of its label pairs. A hook holds a pod in
// PreparingDelete or PreparingUpdate while this is true, so an operator
// releases the pod by removing its handlers.
func IsHooked(hook *pub.LifecycleHook, pod *corev1.Pod) bool {
	if hook == nil {
		return false
	}
	for _, f := range hook.FinalizersHandler {
		if slices.Contains(pod.Finalizers, f) {
			return true
		}
	}
	for k, v := range hook.LabelsHandler {
		if got, ok := pod.Labels[k]; ok && got == v {
			return true
		}
	}
	return false
}

// IsAllHooked reports whether every handler of the hook is on the pod. A
// preNormal hook releases a new pod, and an inPlaceUpdate hook an updated
// one, only once this is true, so there an operator adds the handlers. A nil
// hook is never all-hooked; a hook with no handlers always is.
func IsAllHooked(hook *pub.LifecycleHook, pod *corev1.Pod) bool {
	if hook == nil {
		return false
	}
	for _, f := range hook.FinalizersHandler {
		if !slices.Contains(pod.Finalizers, f) {
			return false
		}
	}
	for k, v := range hook.LabelsHandler {
		if got, ok := pod.Labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}
