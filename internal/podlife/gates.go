package podlife

import (
	"slices"
	"time"

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
		if !podfacts.KubeletReported(pod) {
			// It cannot be Ready before its kubelet reports, and the
			// pod status webhook sets InPlaceUpdateReady in that
			// report (InPlaceGateOpensInStatus); without the webhook
			// the condition is written here once the report is seen.
			set = slices.DeleteFunc(set, func(t corev1.PodConditionType) bool { return t == pub.InPlaceUpdateReady })
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

// InPlaceGateOpensInStatus reports whether a status write of pod, its
// kubelet's, should set its InPlaceUpdateReady condition True: the pod
// carries the gate and has never had the condition. The condition is
// False only during an in-place update, which sets it so itself; a new
// pod's is True from its first report, as WithInitPodReady would write it.
// Setting it in a write the pod gets anyway saves a write per pod.
func InPlaceGateOpensInStatus(pod *corev1.Pod) bool {
	if !podfacts.HasReadinessGate(pod, pub.InPlaceUpdateReady) {
		return false
	}
	_, found := conditionStatus(pod, pub.InPlaceUpdateReady)
	return !found
}

// OpenInPlaceGate sets pod's InPlaceUpdateReady condition True as of now.
func OpenInPlaceGate(pod *corev1.Pod, now time.Time) {
	pod.Status.Conditions = append(pod.Status.Conditions, trueCondition(pub.InPlaceUpdateReady, now))
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
