package planner

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/cloneset/revision"
)

// State is a pod's lifecycle state label.
func State(pod *corev1.Pod) pub.LifecycleStateType {
	return pub.LifecycleStateType(pod.Labels[pub.LifecycleStateKey])
}

// IsUpdated reports whether the pod is at the named revision.
func IsUpdated(pod *corev1.Pod, revisionName string) bool {
	return revision.Matches(pod.Labels[appsv1.ControllerRevisionHashLabelKey], revisionName)
}

// IsSpecifiedDelete reports whether someone asked for the pod's deletion:
// the specified-delete label, or its name in scaleStrategy.podsToDelete.
func IsSpecifiedDelete(pod *corev1.Pod, podsToDelete map[string]bool) bool {
	_, labelled := pod.Labels[appsv1alpha1.SpecifiedDeleteKey]
	return labelled || podsToDelete[pod.Name]
}

// IsReady reports whether the pod is running and has been Ready for at
// least minReadySeconds, with its InPlaceUpdateReady condition, if any, True.
// The lifecycle state does not matter here.
func IsReady(pod *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	if pod.Status.Phase != corev1.PodRunning {
		return false
	}
	ready := false
	for _, c := range pod.Status.Conditions {
		switch c.Type {
		case corev1.PodReady:
			ready = c.Status == corev1.ConditionTrue &&
				(minReadySeconds == 0 || !c.LastTransitionTime.Add(time.Duration(minReadySeconds)*time.Second).After(now))
		case pub.InPlaceUpdateReady:
			if c.Status != corev1.ConditionTrue {
				return false
			}
		}
	}
	return ready
}

// IsAvailable reports whether the pod counts as available: Ready for
// minReadySeconds and in the Normal lifecycle state (a missing state counts
// as Normal). Pods held by any hook are unavailable.
func IsAvailable(pod *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	s := State(pod)
	return (s == "" || s == pub.LifecycleStateNormal) && IsReady(pod, minReadySeconds, now)
}

// readySince is when the pod last became Ready, or the zero time.
func readySince(pod *corev1.Pod) time.Time {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// untilAvailable is how long a Ready pod still has to wait for
// minReadySeconds, or 0.
func untilAvailable(pod *corev1.Pod, minReadySeconds int32, now time.Time) time.Duration {
	since := readySince(pod)
	if minReadySeconds == 0 || since.IsZero() {
		return 0
	}
	return max(since.Add(time.Duration(minReadySeconds)*time.Second).Sub(now), 0)
}
