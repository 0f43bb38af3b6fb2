// Package podlife is the pod's life as every Lifeline workload shares it:
// the actions a planner asks for (create, delete, move between lifecycle
// states, set readiness-gate conditions, update in place), the pod writes
// they carry, the lifecycle transitions with their hook and markPodNotReady
// rules, and the in-place update. A workload's planner decides how many
// pods to create, delete and update and which; it emits these actions, and
// one executor carries them out. Nothing here knows a workload's kind.
package podlife

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	"github.com/lifeline-k8s/lifeline/internal/disruption"
)

// Action is one step of a plan. Each kind is a type of its own with its
// own payload; the executor switches on the type.
type Action interface {
	// Kind names the action's type, for events, metrics and logs.
	Kind() string
	// Target is the pod acted on; nil for CreatePod.
	Target() *corev1.Pod
	// Why says why, for events and logs.
	Why() string
}

// Writer is an action that writes its pod with a guarded patch: SetState,
// InitPodReady, UpdateInPlace, FinishGrace, UpdateNextBatch and Relabel.
// The others are executed by kind: CreatePod, DeletePod, ReleasePod,
// AdoptPod (its owner reference), HandOverClaim and DeleteClaim.
type Writer interface {
	Action
	// PodWrites are the writes to the target, in order; each is sent only
	// once the one before it succeeded.
	PodWrites() []PodWrite
	// Warned are said, as Warning events, once the action is done.
	Warned() []Warning
}

// Disrupter is an action that may take its pod out of service, which a
// disruption check (PodUnavailableBudget) must allow first.
type Disrupter interface {
	Action
	// Disrupts is how the action takes its pod out of service, "" when it
	// does not.
	Disrupts() disruption.Kind
}

// Warning is a Warning event an action calls for: Reason is its reason
// code, Message its text.
type Warning struct {
	Reason, Message string
}

// CreatePod creates a pod (and its claims) at Revision.
type CreatePod struct {
	// InstanceID is the workload's id for the new pod: a CloneSet's random
	// instance id, a StatefulSet's ordinal.
	InstanceID string
	// Revision is the revision whose template the pod is made from.
	Revision string
	// State is the lifecycle state the pod starts in.
	State  pub.LifecycleStateType
	Reason string
}

// DeletePod deletes a pod and the claims that go with it.
type DeletePod struct {
	Pod *corev1.Pod
	// Claims are deleted with the pod: a workload deleting a pod also
	// deletes its volumes; only a pod that vanished otherwise leaves them
	// for its successor.
	Claims []*corev1.PersistentVolumeClaim
	Reason string
}

// SetState moves a pod to another lifecycle state, written out in full:
// the state label and its timestamp, handlers put back, the KruisePodReady
// reasons, and any readiness-gate condition the pod still lacks.
type SetState struct {
	Pod      *corev1.Pod
	From, To pub.LifecycleStateType
	// Disruption is set when the move holds the pod for a disruption:
	// PreparingDelete (a delete), PreparingUpdate (an in-place update).
	Disruption disruption.Kind
	Writes     []PodWrite
	Warnings   []Warning
	Reason     string
}

// InitPodReady sets readiness-gate conditions True, so the gates do not
// hold the pod NotReady: KruisePodReady and InPlaceUpdateReady on a new
// pod, InPlaceUpdateReady after an in-place update that never started.
type InitPodReady struct {
	Pod        *corev1.Pod
	Conditions []corev1.PodConditionType
	Writes     []PodWrite
	Reason     string
}

// UpdateInPlace changes a pod's images, labels and annotations to Revision
// without recreating it; the pod goes Updating and NotReady until its
// containers run the new images.
type UpdateInPlace struct {
	Pod      *corev1.Pod
	Revision string
	// TakeBudget has the disruption budgets admit and record the update
	// before the pod leaves service: no pod admission sees an in-place
	// update, so the executor takes it.
	TakeBudget bool
	Writes     []PodWrite
	Reason     string
}

// FinishGrace applies the images an in-place update held back for its
// grace period.
type FinishGrace struct {
	Pod    *corev1.Pod
	Writes []PodWrite
	Reason string
}

// UpdateNextBatch applies the next container batch of an in-place update
// (by KRUISE_CONTAINER_PRIORITY) once the previous batch runs and is Ready.
type UpdateNextBatch struct {
	Pod *corev1.Pod
	// Containers are the containers whose images change, sorted.
	Containers []string
	Writes     []PodWrite
	Reason     string
}

// ReleasePod removes the workload's owner reference from a pod its
// selector no longer matches, as a ReplicaSet releases it.
type ReleasePod struct {
	Pod      *corev1.Pod
	OwnerUID types.UID
	Reason   string
}

// AdoptPod makes the workload the controller of an orphaned pod its
// selector matches, as a StatefulSet adopts one.
type AdoptPod struct {
	Pod    *corev1.Pod
	Owner  metav1.OwnerReference
	Reason string
}

// Relabel repairs labels a workload's pod must carry (an Advanced
// StatefulSet pod's identity), in a write guarded as every pod write is.
type Relabel struct {
	Pod    *corev1.Pod
	Writes []PodWrite
	Reason string
}

// HandOverClaim makes Pod the only owner of a claim, so the claim goes
// when the pod goes (disablePVCReuse with a terminating pod).
type HandOverClaim struct {
	Claim  *corev1.PersistentVolumeClaim
	Pod    *corev1.Pod
	Reason string
}

// DeleteClaim deletes a claim no pod will use.
type DeleteClaim struct {
	Claim  *corev1.PersistentVolumeClaim
	Reason string
}

func (ReleasePod) Kind() string    { return "ReleasePod" }
func (AdoptPod) Kind() string      { return "AdoptPod" }
func (Relabel) Kind() string       { return "Relabel" }
func (HandOverClaim) Kind() string { return "HandOverClaim" }
func (DeleteClaim) Kind() string   { return "DeleteClaim" }

func (a ReleasePod) Target() *corev1.Pod  { return a.Pod }
func (a AdoptPod) Target() *corev1.Pod    { return a.Pod }
func (a Relabel) Target() *corev1.Pod     { return a.Pod }
func (HandOverClaim) Target() *corev1.Pod { return nil }
func (DeleteClaim) Target() *corev1.Pod   { return nil }

func (a ReleasePod) Why() string    { return a.Reason }
func (a AdoptPod) Why() string      { return a.Reason }
func (a Relabel) Why() string       { return a.Reason }
func (a HandOverClaim) Why() string { return a.Reason }
func (a DeleteClaim) Why() string   { return a.Reason }

func (CreatePod) Kind() string       { return "CreatePod" }
func (DeletePod) Kind() string       { return "DeletePod" }
func (SetState) Kind() string        { return "SetState" }
func (InitPodReady) Kind() string    { return "InitPodReady" }
func (UpdateInPlace) Kind() string   { return "UpdateInPlace" }
func (FinishGrace) Kind() string     { return "FinishGrace" }
func (UpdateNextBatch) Kind() string { return "UpdateNextBatch" }

func (CreatePod) Target() *corev1.Pod         { return nil }
func (a DeletePod) Target() *corev1.Pod       { return a.Pod }
func (a SetState) Target() *corev1.Pod        { return a.Pod }
func (a InitPodReady) Target() *corev1.Pod    { return a.Pod }
func (a UpdateInPlace) Target() *corev1.Pod   { return a.Pod }
func (a FinishGrace) Target() *corev1.Pod     { return a.Pod }
func (a UpdateNextBatch) Target() *corev1.Pod { return a.Pod }

func (a CreatePod) Why() string       { return a.Reason }
func (a DeletePod) Why() string       { return a.Reason }
func (a SetState) Why() string        { return a.Reason }
func (a InitPodReady) Why() string    { return a.Reason }
func (a UpdateInPlace) Why() string   { return a.Reason }
func (a FinishGrace) Why() string     { return a.Reason }
func (a UpdateNextBatch) Why() string { return a.Reason }

func (a SetState) PodWrites() []PodWrite        { return a.Writes }
func (a InitPodReady) PodWrites() []PodWrite    { return a.Writes }
func (a UpdateInPlace) PodWrites() []PodWrite   { return a.Writes }
func (a FinishGrace) PodWrites() []PodWrite     { return a.Writes }
func (a UpdateNextBatch) PodWrites() []PodWrite { return a.Writes }
func (a Relabel) PodWrites() []PodWrite         { return a.Writes }

func (a SetState) Warned() []Warning      { return a.Warnings }
func (InitPodReady) Warned() []Warning    { return nil }
func (UpdateInPlace) Warned() []Warning   { return nil }
func (FinishGrace) Warned() []Warning     { return nil }
func (UpdateNextBatch) Warned() []Warning { return nil }
func (Relabel) Warned() []Warning         { return nil }

func (DeletePod) Disrupts() disruption.Kind     { return disruption.Delete }
func (a SetState) Disrupts() disruption.Kind    { return a.Disruption }
func (UpdateInPlace) Disrupts() disruption.Kind { return disruption.InPlaceUpdate }

// ChangesStates reports whether actions move a pod to another lifecycle
// state: what a reader of the pods sees of a step.
func ChangesStates(actions []Action) bool {
	for _, a := range actions {
		if _, ok := a.(SetState); ok {
			return true
		}
	}
	return false
}
