package podfacts

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
)

var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func pod(state pub.LifecycleStateType, readyFor time.Duration, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-readyFor))},
		}},
	}
	if state != "" {
		p.Labels[pub.LifecycleStateKey] = string(state)
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

// Availability as OpenKruise defines it (reference §2.5): Ready for
// minReadySeconds, InPlaceUpdateReady absent or True, and Normal (or no
// state); readiness leaves the lifecycle state out.
func TestReadyAndAvailable(t *testing.T) {
	inPlaceNotReady := func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionFalse})
	}
	pending := func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }
	for _, tc := range []struct {
		name             string
		pod              *corev1.Pod
		minReady         int32
		ready, available bool
	}{
		{"Normal and Ready", pod(pub.LifecycleStateNormal, time.Minute), 0, true, true},
		{"no state counts as Normal", pod("", time.Minute), 0, true, true},
		{"held in PreparingNormal: ready, not available", pod(pub.LifecycleStatePreparingNormal, time.Minute), 0, true, false},
		{"PreparingDelete", pod(pub.LifecycleStatePreparingDelete, time.Minute), 0, true, false},
		{"Updated", pod(pub.LifecycleStateUpdated, time.Minute), 0, true, false},
		{"not yet past minReadySeconds", pod(pub.LifecycleStateNormal, 5*time.Second), 10, false, false},
		{"past minReadySeconds", pod(pub.LifecycleStateNormal, 10*time.Second), 10, true, true},
		{"InPlaceUpdateReady False", pod(pub.LifecycleStateNormal, time.Minute, inPlaceNotReady), 0, false, false},
		{"not running", pod(pub.LifecycleStateNormal, time.Minute, pending), 0, false, false},
	} {
		if got := IsReady(tc.pod, tc.minReady, now); got != tc.ready {
			t.Errorf("%s: ready %v, want %v", tc.name, got, tc.ready)
		}
		if got := IsAvailable(tc.pod, tc.minReady, now); got != tc.available {
			t.Errorf("%s: available %v, want %v", tc.name, got, tc.available)
		}
	}
	if wait := UntilAvailable(pod(pub.LifecycleStateNormal, 4*time.Second), 10, now); wait != 6*time.Second {
		t.Errorf("until available: %v, want 6s", wait)
	}
}

func TestInPlaceUpdateDone(t *testing.T) {
	updating := func(statusImage, imageID string) *corev1.Pod {
		return pod(pub.LifecycleStateUpdating, time.Minute, func(p *corev1.Pod) {
			p.Annotations = map[string]string{pub.InPlaceUpdateStateKey: `{"revision":"r2","updateTimestamp":null,"lastContainerStatuses":{"main":{"imageID":"id-1"}}}`}
			p.Spec.Containers = []corev1.Container{{Name: "main", Image: "nginx"}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: statusImage, ImageID: imageID}}
		})
	}
	if InPlaceUpdateDone(updating("nginx:1", "id-1")) {
		t.Error("done while the container runs its old image")
	}
	if !InPlaceUpdateDone(updating("nginx:1", "id-2")) {
		t.Error("not done though the container runs a new image")
	}
	// The same image behind a new tag keeps its imageID; an untagged spec
	// image is compared as :latest.
	if !InPlaceUpdateDone(updating("nginx:latest", "id-1")) {
		t.Error("not done though the status shows the spec's image")
	}
	withGrace := updating("nginx:1", "id-2")
	withGrace.Annotations[pub.InPlaceUpdateGraceKey] = `{"revision":"r2","graceSeconds":5}`
	if InPlaceUpdateDone(withGrace) || Grace(withGrace) == nil || Grace(withGrace).GraceSeconds != 5 {
		t.Error("done during a grace period")
	}
	if !InPlaceUpdateDone(pod(pub.LifecycleStateNormal, time.Minute)) {
		t.Error("a pod never updated in place is not done")
	}
}

func TestIsActive(t *testing.T) {
	now := metav1.Now()
	for _, c := range []struct {
		name string
		pod  corev1.Pod
		want bool
	}{
		{"pending", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending}}, true},
		{"running", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, true},
		{"no phase yet", corev1.Pod{}, true},
		{"terminating", corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}, false},
		{"succeeded", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, false},
		{"failed", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed}}, false},
	} {
		if got := IsActive(&c.pod); got != c.want {
			t.Errorf("%s: IsActive = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestSameImageUnderAnotherTagIsDoneOnceRestarted: the new tag names the
// image the container ran (same imageID) and the runtime reports the image
// by another of its tags; the update is done once a container other than
// the recorded one runs, never while the recorded one still does, nor
// while the new one waits (an image that cannot be pulled), nor on a
// record without the container (written by OpenKruise).
func TestSameImageUnderAnotherTagIsDoneOnceRestarted(t *testing.T) {
	const record = `{"revision":"r2","updateTimestamp":null,"lastContainerStatuses":{"main":{"imageID":"sha256:one","containerID":"containerd://a"}}}`
	const kruiseRecord = `{"revision":"r2","updateTimestamp":null,"lastContainerStatuses":{"main":{"imageID":"sha256:one"}}}`
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	waiting := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull"}}
	for _, c := range []struct {
		name, record, containerID string
		state                     corev1.ContainerState
		done                      bool
	}{
		{"the recorded container still runs", record, "containerd://a", running, false},
		{"a new container runs", record, "containerd://b", running, true},
		{"the new container waits", record, "containerd://b", waiting, false},
		{"no container reported", record, "", running, false},
		{"OpenKruise's record", kruiseRecord, "containerd://b", running, false},
	} {
		p := pod(pub.LifecycleStateUpdating, time.Minute, func(p *corev1.Pod) {
			p.Annotations = map[string]string{pub.InPlaceUpdateStateKey: c.record}
			p.Spec.Containers = []corev1.Container{{Name: "main", Image: "app:v1-again"}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: "app:v1", ImageID: "sha256:one", ContainerID: c.containerID, State: c.state}}
		})
		if got := InPlaceUpdateDone(p); got != c.done {
			t.Errorf("%s: done %t, want %t", c.name, got, c.done)
		}
	}
}
