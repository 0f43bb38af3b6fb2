package planner

import (
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// Status computes a CloneSet's status from its pods. previous is the stored
// status, whose conditions carry over. It also returns how long until the
// Progressing condition's deadline passes, or 0.
func Status(s Snapshot, previous appsv1alpha1.CloneSetStatus, collisionCount int32, labelSelector string) (appsv1alpha1.CloneSetStatus, time.Duration) {
	cs := s.CloneSet
	st := appsv1alpha1.CloneSetStatus{
		ObservedGeneration: cs.Generation,
		UpdateRevision:     s.UpdateRevision,
		CurrentRevision:    s.CurrentRevision,
		CollisionCount:     &collisionCount,
		LabelSelector:      labelSelector,
		Conditions:         append([]appsv1alpha1.CloneSetCondition(nil), previous.Conditions...),
	}
	minReady := cs.Spec.MinReadySeconds
	for _, pod := range s.Pods {
		st.Replicas++
		ready, available, updated := podfacts.IsReady(pod, 0, s.Now), podfacts.IsAvailable(pod, minReady, s.Now), podfacts.AtRevision(pod, s.UpdateRevision)
		if ready {
			st.ReadyReplicas++
		}
		if available {
			st.AvailableReplicas++
		}
		if updated {
			st.UpdatedReplicas++
			if ready {
				st.UpdatedReadyReplicas++
			}
			if available {
				st.UpdatedAvailableReplicas++
			}
		}
	}
	replicas := replicasOf(cs)
	if partition, err := Partition(cs.Spec.UpdateStrategy.Partition, replicas); err == nil {
		st.ExpectedUpdatedReplicas = int32(replicas - partition)
	}
	// The rollout is over once every pod is at the update revision and
	// the count is right; readiness is not required (as OpenKruise).
	if st.UpdatedReplicas == st.Replicas && int(st.Replicas) == replicas {
		st.CurrentRevision = s.UpdateRevision
	}
	deadline := setProgressing(cs, &st, s.Now)
	return st, deadline
}

// setProgressing maintains the Progressing condition when
// progressDeadlineSeconds is set, and returns the time left to the deadline.
//
// OpenKruise measures the deadline from the lastUpdateTime of whatever
// Progressing condition came before, so a CloneSet that has been Available,
// Paused or PartitionAvailable for longer than the deadline is marked
// ProgressDeadlineExceeded on the first reconcile of a new rollout. We fix
// that, as the design proposal intended: a rollout's clock starts when it
// starts, i.e. when the condition becomes CloneSetUpdated.
func setProgressing(cs *appsv1alpha1.CloneSet, st *appsv1alpha1.CloneSetStatus, now time.Time) time.Duration {
	pds := cs.Spec.ProgressDeadlineSeconds
	if pds == nil || *pds == math.MaxInt32 {
		removeCondition(st, appsv1alpha1.CloneSetConditionTypeProgressing)
		return 0
	}
	replicas := int32(replicasOf(cs))
	prev := findCondition(st, appsv1alpha1.CloneSetConditionTypeProgressing)
	switch {
	case st.CurrentRevision == st.UpdateRevision && st.Replicas == replicas && st.UpdatedReplicas == replicas && st.UpdatedAvailableReplicas == replicas:
		setCondition(st, corev1.ConditionTrue, appsv1alpha1.CloneSetAvailable, "CloneSet is available", now)
	case cs.Spec.UpdateStrategy.Paused:
		setCondition(st, corev1.ConditionTrue, appsv1alpha1.CloneSetProgressPaused, "CloneSet is paused", now)
	case st.ExpectedUpdatedReplicas < replicas && st.ExpectedUpdatedReplicas <= st.UpdatedAvailableReplicas:
		setCondition(st, corev1.ConditionTrue, appsv1alpha1.CloneSetProgressPartitionAvailable, "CloneSet has been paused due to partition ready", now)
	case prev != nil && prev.Reason == appsv1alpha1.CloneSetProgressDeadlineExceeded:
		// Sticky until the CloneSet is available, paused or at its partition.
	case prev != nil && prev.Reason == appsv1alpha1.CloneSetProgressUpdated:
		left := prev.LastUpdateTime.Add(time.Duration(*pds) * time.Second).Sub(now)
		if left < 0 {
			setCondition(st, corev1.ConditionFalse, appsv1alpha1.CloneSetProgressDeadlineExceeded,
				fmt.Sprintf("CloneSet revision %s has timed out progressing", st.UpdateRevision), now)
			return 0
		}
		return left + time.Second
	default:
		setCondition(st, corev1.ConditionTrue, appsv1alpha1.CloneSetProgressUpdated, "CloneSet is progressing", now)
		return time.Duration(*pds)*time.Second + time.Second
	}
	return 0
}

func findCondition(st *appsv1alpha1.CloneSetStatus, t appsv1alpha1.CloneSetConditionType) *appsv1alpha1.CloneSetCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

// setCondition sets the Progressing condition. The same status and reason
// leave it untouched, so lastUpdateTime keeps when the reason was first set;
// a new status moves lastTransitionTime too.
func setCondition(st *appsv1alpha1.CloneSetStatus, status corev1.ConditionStatus, reason, message string, now time.Time) {
	prev := findCondition(st, appsv1alpha1.CloneSetConditionTypeProgressing)
	if prev != nil && prev.Status == status && prev.Reason == reason {
		return
	}
	c := appsv1alpha1.CloneSetCondition{
		Type: appsv1alpha1.CloneSetConditionTypeProgressing, Status: status, Reason: reason, Message: message,
		LastUpdateTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now),
	}
	if prev != nil && prev.Status == status {
		c.LastTransitionTime = prev.LastTransitionTime
	}
	removeCondition(st, appsv1alpha1.CloneSetConditionTypeProgressing)
	st.Conditions = append(st.Conditions, c)
}

func removeCondition(st *appsv1alpha1.CloneSetStatus, t appsv1alpha1.CloneSetConditionType) {
	out := st.Conditions[:0]
	for _, c := range st.Conditions {
		if c.Type != t {
			out = append(out, c)
		}
	}
	st.Conditions = out
}

// SetFailure records a FailedScale or FailedUpdate condition with the
// latest failure's message.
//
// OpenKruise sets these once and never removes them, so a CloneSet that
// failed to scale an hour ago still says FailedScale after it recovered. We
// fix that: RecordOutcome removes the condition once the same phase succeeds.
func SetFailure(st *appsv1alpha1.CloneSetStatus, t appsv1alpha1.CloneSetConditionType, err error, now time.Time) {
	if c := findCondition(st, t); c != nil {
		if c.Message != err.Error() {
			c.Message, c.LastUpdateTime = err.Error(), metav1.NewTime(now)
		}
		return
	}
	st.Conditions = append(st.Conditions, appsv1alpha1.CloneSetCondition{
		Type: t, Status: corev1.ConditionTrue, Message: err.Error(),
		LastUpdateTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now),
	})
}

// RecordOutcome sets or clears the failure conditions after a step of the
// given phase ran (err is what running its actions returned).
//
// A failure clears when its phase succeeds, and FailedScale also whenever
// the plan moved past scaling: scaling then has nothing left to do, so
// whatever failed has been mended. Clearing only in a step that itself
// scaled left the condition True for good when that step's status write
// was lost (a conflict), since the next step no longer scales.
func RecordOutcome(st *appsv1alpha1.CloneSetStatus, phase Phase, err error, now time.Time) {
	failed := appsv1alpha1.CloneSetConditionFailedUpdate
	if phase == PhaseScale {
		failed = appsv1alpha1.CloneSetConditionFailedScale
	}
	if err != nil {
		SetFailure(st, failed, err, now)
		return
	}
	if phase != PhaseRefresh {
		removeCondition(st, failed)
	}
	if phase != PhaseScale {
		removeCondition(st, appsv1alpha1.CloneSetConditionFailedScale)
	}
}
