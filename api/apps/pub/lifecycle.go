package pub

// LifecycleStateKey is the pod label that holds the pod's LifecycleStateType.
// Hook operators watch it to know when their hook is due.
const LifecycleStateKey = "lifecycle.apps.kruise.io/state"

// LifecycleTimestampKey is the pod annotation that records, in RFC 3339, when
// the lifecycle state last changed. It is rewritten on every state change.
const LifecycleTimestampKey = "lifecycle.apps.kruise.io/timestamp"

// LifecycleStateType is a pod's position in its lifecycle.
type LifecycleStateType string

// The six lifecycle states. A pod without the label, or with an empty value,
// is treated as Normal when availability is computed.
const (
	// LifecycleStatePreparingNormal: the pod was just created and is not yet
	// available; a preNormal hook holds it here until all its handlers are
	// present.
	LifecycleStatePreparingNormal LifecycleStateType = "PreparingNormal"
	// LifecycleStateNormal: the pod is serving.
	LifecycleStateNormal LifecycleStateType = "Normal"
	// LifecycleStatePreparingUpdate: the pod is picked for an in-place update
	// and an inPlaceUpdate hook holds it until any of its handlers is removed.
	LifecycleStatePreparingUpdate LifecycleStateType = "PreparingUpdate"
	// LifecycleStateUpdating: the pod is being updated in place.
	LifecycleStateUpdating LifecycleStateType = "Updating"
	// LifecycleStateUpdated: the in-place update finished; the pod waits for
	// the inPlaceUpdate handlers to come back before it is Normal again.
	LifecycleStateUpdated LifecycleStateType = "Updated"
	// LifecycleStatePreparingDelete: the pod is picked for deletion and a
	// preDelete hook holds it until any of its handlers is removed.
	LifecycleStatePreparingDelete LifecycleStateType = "PreparingDelete"
)

// LifecycleStates lists every state, in the order a pod usually meets them.
var LifecycleStates = []LifecycleStateType{
	LifecycleStatePreparingNormal,
	LifecycleStateNormal,
	LifecycleStatePreparingUpdate,
	LifecycleStateUpdating,
	LifecycleStateUpdated,
	LifecycleStatePreparingDelete,
}

// Lifecycle declares the hooks of a workload's pods.
type Lifecycle struct {
	// PreDelete holds a pod in PreparingDelete before it is deleted.
	PreDelete *LifecycleHook `json:"preDelete,omitempty"`
	// InPlaceUpdate holds a pod in PreparingUpdate before an in-place update,
	// and in Updated after it, until its handlers are back.
	InPlaceUpdate *LifecycleHook `json:"inPlaceUpdate,omitempty"`
	// PreNormal holds a new pod in PreparingNormal, unavailable, until all of
	// its handlers are present.
	PreNormal *LifecycleHook `json:"preNormal,omitempty"`
}

// LifecycleHook names the pod labels and finalizers that hold a pod in a hooked
// state.
type LifecycleHook struct {
	// LabelsHandler is a set of label key/value pairs on the pod.
	LabelsHandler map[string]string `json:"labelsHandler,omitempty"`
	// FinalizersHandler is a set of finalizers on the pod.
	FinalizersHandler []string `json:"finalizersHandler,omitempty"`
	// MarkPodNotReady makes the pod NotReady, through the KruisePodReady
	// readiness gate, while it is PreparingDelete or PreparingUpdate. It has
	// no effect on preNormal.
	MarkPodNotReady bool `json:"markPodNotReady,omitempty"`
}
