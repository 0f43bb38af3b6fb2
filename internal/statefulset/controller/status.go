package controller

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/statefulset/planner"
	"github.com/lifeline-k8s/lifeline/internal/workloadref"
)

// Progressing is the condition that says whether a set's rollout moves
// and, when it does not, why. OpenKruise writes none; users ask why a
// rollout is stuck.
const Progressing appsv1.StatefulSetConditionType = "Progressing"

func statusOf(set *appsv1beta1.StatefulSet) *appsv1beta1.StatefulSetStatus { return &set.Status }

// counts are what the replicas gauge counts.
func counts(set *appsv1beta1.StatefulSet, st *appsv1beta1.StatefulSetStatus) map[string]int32 {
	return map[string]int32{
		"desired": workloadref.Replicas(set.Spec.Replicas), "current": st.Replicas, "updated": st.UpdatedReplicas,
		"ready": st.ReadyReplicas, "available": st.AvailableReplicas,
	}
}

// setProgressing says whether the rollout moves: False when it waits for
// someone else (a hook's operator, a budget, a paused rollout), with why;
// True while it moves, pacing itself included (pods starting,
// maxUnavailable in use: flipping the condition on each would only add
// status writes); True with reason Complete once every pod is updated and
// Ready.
func setProgressing(status *appsv1beta1.StatefulSetStatus, set *appsv1beta1.StatefulSet, plan planner.Plan, now time.Time) {
	replicas := workloadref.Replicas(set.Spec.Replicas)
	switch {
	case plan.Blocked != "" && len(plan.Actions) == 0:
		setCondition(status, Progressing, corev1.ConditionFalse, plan.Blocked, plan.Waiting, now)
	case status.UpdatedReplicas == replicas && status.ReadyReplicas == replicas && status.Replicas == replicas:
		setCondition(status, Progressing, corev1.ConditionTrue, "Complete", "every pod is at the update revision and Ready", now)
	default:
		setCondition(status, Progressing, corev1.ConditionTrue, "Progressing", "", now)
	}
}

// setCondition sets a condition, keeping its transition time unless its
// status changes.
func setCondition(status *appsv1beta1.StatefulSetStatus, t appsv1.StatefulSetConditionType, s corev1.ConditionStatus, reason, message string, now time.Time) {
	for i := range status.Conditions {
		c := &status.Conditions[i]
		if c.Type != t {
			continue
		}
		if c.Status != s {
			c.LastTransitionTime = metav1.NewTime(now)
		}
		c.Status, c.Reason, c.Message = s, reason, message
		return
	}
	status.Conditions = append(status.Conditions, appsv1.StatefulSetCondition{Type: t, Status: s, Reason: reason, Message: message, LastTransitionTime: metav1.NewTime(now)})
}

func removeCondition(status *appsv1beta1.StatefulSetStatus, t appsv1.StatefulSetConditionType) {
	out := status.Conditions[:0]
	for _, c := range status.Conditions {
		if c.Type != t {
			out = append(out, c)
		}
	}
	status.Conditions = out
	if len(out) == 0 {
		status.Conditions = nil
	}
}
