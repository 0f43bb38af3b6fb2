// Package podfacts holds what Lifeline knows about a pod from the pod
// alone, one definition each, for every feature: its lifecycle state and
// since when, whether it is ready and available (minReadySeconds, lifecycle
// hooks, the in-place update gate), and how far an in-place update has got.
// CloneSet plans with them; PodUnavailableBudget counts with them.
package podfacts

import (
	"encoding/json"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
)

// IsActive reports whether the pod counts towards its workload: neither
// terminating nor finished (Succeeded or Failed), as a ReplicaSet counts.
func IsActive(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// State is a pod's lifecycle state label.
func State(pod *corev1.Pod) pub.LifecycleStateType {
	return pub.LifecycleStateType(pod.Labels[pub.LifecycleStateKey])
}

// StateSince is when the pod entered its lifecycle state, from the timestamp
// annotation, or the zero time.
func StateSince(pod *corev1.Pod) time.Time {
	t, err := time.Parse(time.RFC3339, pod.Annotations[pub.LifecycleTimestampKey])
	if err != nil {
		return time.Time{}
	}
	return t
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

// HasReadyCondition reports whether the pod's Ready condition is True,
// whatever its phase and lifecycle state: what the kubelet says, before
// any workload's own rules (IsReady, IsAvailable) are applied.
func HasReadyCondition(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// ReadySince is when the pod last became Ready, or the zero time.
func ReadySince(pod *corev1.Pod) time.Time {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// UntilAvailable is how long a Ready pod still has to wait for
// minReadySeconds, or 0.
func UntilAvailable(pod *corev1.Pod, minReadySeconds int32, now time.Time) time.Duration {
	since := ReadySince(pod)
	if minReadySeconds == 0 || since.IsZero() {
		return 0
	}
	return max(since.Add(time.Duration(minReadySeconds)*time.Second).Sub(now), 0)
}

// GraceSpec is what the grace annotation holds: the images to apply once
// the grace period is over.
type GraceSpec struct {
	Revision        string            `json:"revision"`
	ContainerImages map[string]string `json:"containerImages,omitempty"`
	GraceSeconds    int32             `json:"graceSeconds,omitempty"`
}

// Grace reads a pod's pending grace-period update, or nil.
func Grace(pod *corev1.Pod) *GraceSpec {
	raw, ok := pod.Annotations[pub.InPlaceUpdateGraceKey]
	if !ok {
		return nil
	}
	g := &GraceSpec{}
	if json.Unmarshal([]byte(raw), g) != nil {
		return nil
	}
	return g
}

// InPlaceUpdateState reads a pod's in-place update record, or nil.
func InPlaceUpdateState(pod *corev1.Pod) *pub.InPlaceUpdateState {
	raw, ok := pod.Annotations[pub.InPlaceUpdateStateKey]
	if !ok {
		return nil
	}
	st := &pub.InPlaceUpdateState{}
	if json.Unmarshal([]byte(raw), st) != nil {
		return nil
	}
	return st
}

// InPlaceUpdateDone reports whether an in-place update is over: no grace
// period or container batch is pending, and every container it changed
// runs its new image.
func InPlaceUpdateDone(pod *corev1.Pod) bool {
	if Grace(pod) != nil {
		return false
	}
	st := InPlaceUpdateState(pod)
	if st == nil {
		return true
	}
	return len(st.NextContainerImages) == 0 && ContainersUpdated(pod, st) && EnvFromMetadataUpdated(pod, st)
}

// ContainersUpdated reports whether every container the update changed so
// far runs its new image: its status shows a new imageID, or the spec's
// image (the same image behind a new tag keeps its imageID). As in
// OpenKruise, a spec image without a tag is compared as ":latest".
//
// A new tag that names the image the container already ran keeps its
// imageID, and containerd reports such an image by its first tag, not the
// spec's: OpenKruise's rule then waits forever (openkruise/kruise#2297,
// unless its node daemon reports the kubelet's spec hash). Lifeline also
// counts a running container other than the one recorded when the update
// was written: the kubelet started it from the new spec.
func ContainersUpdated(pod *corev1.Pod, st *pub.InPlaceUpdateState) bool {
	statuses := map[string]corev1.ContainerStatus{}
	for _, cs := range pod.Status.ContainerStatuses {
		statuses[cs.Name] = cs
	}
	for _, c := range pod.Spec.Containers {
		last, changed := st.LastContainerStatuses[c.Name]
		if !changed {
			continue
		}
		status, ok := statuses[c.Name]
		if !ok || (status.ImageID == last.ImageID && status.Image != WithDefaultTag(c.Image) && !restartedSince(status, last)) {
			return false
		}
	}
	return true
}

// restartedSince reports whether the container running now is another than
// the one recorded (a waiting container, such as one whose image cannot be
// pulled, is not).
func restartedSince(status corev1.ContainerStatus, last pub.InPlaceUpdateContainerStatus) bool {
	return last.ContainerID != "" && status.State.Running != nil && status.ContainerID != "" && status.ContainerID != last.ContainerID
}

// WithDefaultTag appends ":latest" to an image without a ":" (OpenKruise's
// rule, which also leaves "host:port/name" alone).
func WithDefaultTag(image string) string {
	if strings.Contains(image, ":") {
		return image
	}
	return image + ":latest"
}

// HasReadinessGate reports whether the pod carries readiness gate t; a
// pod's gates are fixed when it is created.
func HasReadinessGate(pod *corev1.Pod, t corev1.PodConditionType) bool {
	for _, g := range pod.Spec.ReadinessGates {
		if g.ConditionType == t {
			return true
		}
	}
	return false
}

// KubeletReported reports whether the pod's kubelet has written its status
// yet: it sets the start time and the containers' statuses in its first
// write.
func KubeletReported(pod *corev1.Pod) bool {
	return pod.Status.StartTime != nil || len(pod.Status.ContainerStatuses) > 0
}
