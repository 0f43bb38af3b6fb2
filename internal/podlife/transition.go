package podlife

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/disruption"
	"github.com/lifeline-k8s/lifeline/pkg/lifecycle"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// Transition is a lifecycle state change as a rule decides it, before
// SetState writes it out in full.
type Transition struct {
	To pub.LifecycleStateType
	// addNotReady and liftNotReady are KruisePodReady reasons
	// (markPodNotReady) to record and to lift in the same write, so no
	// operator acting on the new state sees the pod still Ready.
	AddNotReady, LiftNotReady string
	// inPlaceDone sets InPlaceUpdateReady back to True: the pod's in-place
	// update is done.
	InPlaceDone bool
	// readd puts this hook's labels and finalizers back on the pod.
	Readd *pub.LifecycleHook
	// specifiedDelete marks the pod apps.kruise.io/specified-delete, so
	// that it is replaced, never revived.
	SpecifiedDelete bool
	// disrupts is set when the move holds the pod for a disruption, which
	// the disruption check must allow first.
	Disrupts disruption.Kind
}

// SetState is the action that makes transition t of pod, written out in
// full: the state label and its timestamp, handlers put back, the
// KruisePodReady reasons, and in the same write any readiness-gate
// condition the pod still lacks or was left False by an in-place update
// that never started.
func (l Life) SetState(pod *corev1.Pod, t Transition, reason string) Action {
	a := SetState{Pod: pod, From: podfacts.State(pod), To: t.To, Disruption: t.Disrupts, Reason: reason}
	var w PodWrite
	w.SetLabel(pub.LifecycleStateKey, string(t.To))
	w.SetAnnotation(pub.LifecycleTimestampKey, Timestamp(l.Now))
	if t.SpecifiedDelete {
		w.SetLabel(appsv1alpha1.SpecifiedDeleteKey, "true")
	}
	if h := t.Readd; h != nil {
		for k, v := range h.LabelsHandler {
			w.SetLabel(k, v)
		}
		for _, f := range h.FinalizersHandler {
			if !slices.Contains(pod.Finalizers, f) {
				w.AddFinalizers = append(w.AddFinalizers, f)
			}
		}
	}
	for _, c := range missingGateConditions(pod) {
		w.SetCondition(trueCondition(c, l.Now))
	}
	if t.InPlaceDone {
		a.Warnings = append(a.Warnings, envNotRestarted(pod)...)
	}
	if (t.InPlaceDone || strandedNotReady(pod)) && podfacts.HasReadinessGate(pod, pub.InPlaceUpdateReady) {
		w.SetCondition(trueCondition(pub.InPlaceUpdateReady, l.Now))
	}
	if t.AddNotReady != "" && !podfacts.HasReadinessGate(pod, pub.KruisePodReadyConditionType) {
		// Readiness gates are fixed at creation: a pod made before
		// markPodNotReady was set cannot be made NotReady. Say so where
		// the hook holds it, rather than leave it serving silently.
		a.Warnings = append(a.Warnings, Warning{Reason: "MarkPodNotReadyUnavailable", Message: fmt.Sprintf(
			"pod %s stays Ready in %s: it has no %s readiness gate (created before markPodNotReady was set); recreate it to get one",
			pod.Name, t.To, pub.KruisePodReadyConditionType)})
	}
	if c, changed := kruisePodReady(pod, t.LiftNotReady, t.AddNotReady, l.Now); changed {
		w.SetCondition(c)
	}
	a.Writes = []PodWrite{w}
	return a
}

// DeleteOrHold is the action that deletes a pod (with claims), unless its
// preDelete hook holds it: then the pod moves to PreparingDelete (and
// NotReady, with markPodNotReady) and waits there for its operator.
// specified marks it apps.kruise.io/specified-delete in the same write, so
// it is replaced, never revived.
func (l Life) DeleteOrHold(pod *corev1.Pod, claims []*corev1.PersistentVolumeClaim, why string, specified bool) Action {
	preDelete := l.Hook(PreDeleteHook)
	if !lifecycle.IsHooked(preDelete, pod) {
		return DeletePod{Pod: pod, Claims: claims, Reason: why}
	}
	t := Transition{To: pub.LifecycleStatePreparingDelete, SpecifiedDelete: specified, Disrupts: disruption.Delete}
	if preDelete.MarkPodNotReady {
		t.AddNotReady = pub.PodReadyKeyPreDeleteHook
	}
	return l.SetState(pod, t, why+"; its preDelete hook holds it")
}

// InitPodReady is the action that sets a pod's readiness-gate conditions
// of types True.
func (l Life) InitPodReady(pod *corev1.Pod, types []corev1.PodConditionType, reason string) Action {
	var w PodWrite
	for _, t := range types {
		w.SetCondition(trueCondition(t, l.Now))
	}
	return InitPodReady{Pod: pod, Conditions: types, Writes: []PodWrite{w}, Reason: reason}
}

func trueCondition(t corev1.PodConditionType, now time.Time) corev1.PodCondition {
	return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now)}
}

// Timestamp is how lifecycle and in-place timestamps are written: RFC 3339,
// to the second, as OpenKruise writes them.
func Timestamp(t time.Time) string { return t.Format(time.RFC3339) }

// kruisePodReady is the pod's KruisePodReady condition with the NotReady
// reason lift lifted and add added (either may be empty): True when no
// reason is left. A pod without the gate is left alone, as the condition
// would not make it NotReady; changed is false when nothing changes.
func kruisePodReady(pod *corev1.Pod, lift, add string, now time.Time) (cond corev1.PodCondition, changed bool) {
	if (lift == "" && add == "") || !podfacts.HasReadinessGate(pod, pub.KruisePodReadyConditionType) {
		return cond, false
	}
	cond = corev1.PodCondition{Type: pub.KruisePodReadyConditionType, Status: corev1.ConditionTrue}
	missing := true
	for _, c := range pod.Status.Conditions {
		if c.Type == pub.KruisePodReadyConditionType {
			cond, missing = c, false
		}
	}
	message, status := cond.Message, cond.Status
	if lift != "" {
		if rest, held, found := lifecycle.RemoveNotReadyReason(message, pub.PodReadyUserAgentLifecycle, lift); found {
			message, status = rest, corev1.ConditionTrue
			if held {
				status = corev1.ConditionFalse
			}
		}
	}
	if add != "" {
		message, status = lifecycle.AddNotReadyReason(message, pub.PodReadyUserAgentLifecycle, add), corev1.ConditionFalse
	}
	if !missing && message == cond.Message && status == cond.Status {
		return cond, false
	}
	cond.Message, cond.Status, cond.LastTransitionTime = message, status, metav1.NewTime(now)
	return cond, true
}
