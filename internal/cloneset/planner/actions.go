package planner

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
)

// ActionType is what an action does.
type ActionType string

const (
	// CreatePod creates a pod, with PVCs for its instance id, at Revision.
	CreatePod ActionType = "CreatePod"
	// DeletePod deletes a pod and its PVCs.
	DeletePod ActionType = "DeletePod"
	// SetState moves a pod to another lifecycle state.
	SetState ActionType = "SetState"
	// InitPodReady sets the pod's Conditions True, so its readiness gates
	// do not hold it NotReady: KruisePodReady and InPlaceUpdateReady on a
	// new pod, InPlaceUpdateReady after an interrupted in-place update.
	InitPodReady ActionType = "InitPodReady"
	// UpdateInPlace changes a pod's images, labels and annotations to
	// Revision without recreating it; the pod goes Updating and NotReady
	// until its containers run the new images.
	UpdateInPlace ActionType = "UpdateInPlace"
	// FinishGrace applies the images an in-place update held back for its
	// grace period.
	FinishGrace ActionType = "FinishGrace"
	// UpdateNextBatch applies the next container batch of an in-place
	// update by container priority (KRUISE_CONTAINER_PRIORITY) once the
	// previous batch runs and is Ready.
	UpdateNextBatch ActionType = "UpdateNextBatch"
)

// Action is one step of a plan: what it does to which pod, and why. A
// CreatePod carries the pod to make, every other action but DeletePod the
// writes to its pod, each written out in full.
type Action struct {
	Type ActionType
	// Pod is the pod acted on; nil for CreatePod.
	Pod *corev1.Pod
	// Create is the pod a CreatePod makes.
	Create *Creation
	// Writes are the writes to Pod, in order; each is sent only once the
	// one before it succeeded.
	Writes []PodWrite
	// Reason says why, for events and logs.
	Reason string
	// Warnings are said, as Warning events, once the action is done.
	Warnings []Warning
}

// State is the lifecycle state the action leaves its pod in: the one a
// created pod starts in, or the one its writes set; "" for none.
func (a Action) State() pub.LifecycleStateType {
	if a.Create != nil {
		return a.Create.State
	}
	for i := len(a.Writes) - 1; i >= 0; i-- {
		if s, ok := a.Writes[i].Labels[pub.LifecycleStateKey]; ok {
			return pub.LifecycleStateType(s)
		}
	}
	return ""
}

// Revision is the revision the action moves its pod to: the one a created
// pod is made from, or the one an in-place update writes; "" for none.
func (a Action) Revision() string {
	if a.Create != nil {
		return a.Create.Revision
	}
	for _, w := range a.Writes {
		if r, ok := w.Labels[appsv1.ControllerRevisionHashLabelKey]; ok {
			return r
		}
	}
	return ""
}

// Warning is a Warning event an action calls for: Reason is its reason
// code, Message its text.
type Warning struct {
	Reason, Message string
}
