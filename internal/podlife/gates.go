package podlife

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// WithInitPodReady adds to actions the setting True of readiness-gate
// conditions that should be True and are not: KruisePodReady and
// InPlaceUpdateReady on pods that carry the gate but not the condition yet,
// and InPlaceUpdateReady left False by an in-place update that never
// started (the controller stopped between the condition and the images, and
// the pod was not picked again, say after a rollback). Pods the actions
// already touch are left out: a plan's actions must not race on one pod.
func (l Life) WithInitPodReady(pods []*corev1.Pod, actions []Action) []Action {
	touched := map[*corev1.Pod]bool{}
	for _, a := range actions {
		// A state change repairs and initialises in its own write (see
		// SetState).
		touched[a.Target()] = true
	}
	preNormal := l.Hook(PreNormalHook)
	for _, pod := range pods {
		if touched[pod] {
			continue
		}
		set := missingGateConditions(pod)
		reason := "a new pod's readiness gates"
		if len(set) > 0 && preNormal == nil && podfacts.State(pod) == pub.LifecycleStatePreparingNormal && pod.Spec.NodeName == "" {
			// It cannot be Ready before it runs, and the write that
			// makes it Normal once scheduled carries the conditions.
			set = nil
		}
		if strandedNotReady(pod) {
			set = append(set, pub.InPlaceUpdateReady)
			reason = "an in-place update that never started left it NotReady"
		}
		if len(set) > 0 {
			actions = append(actions, l.InitPodReady(pod, set, reason))
		}
	}
	return actions
}

// missingGateConditions are the readiness gates of ours on the pod whose
// condition it does not have yet: set True once the pod may become Ready.
func missingGateConditions(pod *corev1.Pod) []corev1.PodConditionType {
	var missing []corev1.PodConditionType
	for _, g := range pod.Spec.ReadinessGates {
		if g.ConditionType != pub.KruisePodReadyConditionType && g.ConditionType != pub.InPlaceUpdateReady {
			continue
		}
		if _, found := conditionStatus(pod, g.ConditionType); !found {
			missing = append(missing, g.ConditionType)
		}
	}
	return missing
}

// strandedNotReady reports whether pod's InPlaceUpdateReady condition is
// False though no in-place update of it is under way.
func strandedNotReady(pod *corev1.Pod) bool {
	status, _ := conditionStatus(pod, pub.InPlaceUpdateReady)
	return status == corev1.ConditionFalse && podfacts.State(pod) != pub.LifecycleStateUpdating && podfacts.Grace(pod) == nil && pod.DeletionTimestamp == nil
}

func conditionStatus(pod *corev1.Pod, t corev1.PodConditionType) (corev1.ConditionStatus, bool) {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status, true
		}
	}
	return "", false
}
