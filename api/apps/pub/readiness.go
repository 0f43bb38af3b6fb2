package pub

import corev1 "k8s.io/api/core/v1"

// InPlaceUpdateReady is the readiness gate and pod condition that keep a pod
// NotReady while its containers are updated in place. Lifeline injects it into
// every CloneSet pod at creation.
const InPlaceUpdateReady corev1.PodConditionType = "InPlaceUpdateReady"

// KruisePodReadyConditionType is the readiness gate and pod condition through
// which markPodNotReady makes a hooked pod NotReady. The pod webhook injects
// the gate into pods owned by a Lifeline workload.
const KruisePodReadyConditionType corev1.PodConditionType = "KruisePodReady"

// PodReadyMessageEntry is one element of the JSON array in the KruisePodReady
// condition's message: who holds the pod NotReady, and why. Lifecycle hooks
// write UserAgent "Lifecycle" with key "preDeleteHook" or "preUpdateHook".
type PodReadyMessageEntry struct {
	UserAgent string `json:"userAgent"`
	Key       string `json:"key"`
}

// Keys of the KruisePodReady message written by lifecycle hooks.
const (
	PodReadyUserAgentLifecycle = "Lifecycle"
	PodReadyKeyPreDeleteHook   = "preDeleteHook"
	PodReadyKeyPreUpdateHook   = "preUpdateHook"
)
