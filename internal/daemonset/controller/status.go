package controller

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/daemonset/planner"
)

// Progressing is the condition that says whether a set's rollout moves
// and, when it does not, why. OpenKruise writes none; users ask why a
// rollout is stuck.
const Progressing appsv1.DaemonSetConditionType = "Progressing"

func statusOf(set *appsv1beta1.DaemonSet) *appsv1beta1.DaemonSetStatus { return &set.Status }

// counts are what the nodes gauge counts.
func counts(st *appsv1beta1.DaemonSetStatus) map[string]int32 {
	return map[string]int32{
		"desired": st.DesiredNumberScheduled, "current": st.CurrentNumberScheduled, "updated": st.UpdatedNumberScheduled,
		"ready": st.NumberReady, "available": st.NumberAvailable, "misscheduled": st.NumberMisscheduled,
	}
}

// setProgressing says whether the rollout moves: False when it waits for
// someone else (a hook's operator, a budget, a paused or partitioned
// rollout), with why; True while it moves, pacing itself included; True
// with reason Complete once every node that should run a pod runs an
// available pod of the update revision.
func setProgressing(status *appsv1beta1.DaemonSetStatus, plan planner.Plan, now time.Time) {
	desired := status.DesiredNumberScheduled
	switch {
	case plan.Blocked != "" && len(plan.Actions) == 0:
		setCondition(status, corev1.ConditionFalse, plan.Blocked, plan.Waiting, now)
	case status.UpdatedNumberScheduled == desired && status.NumberAvailable == desired && status.CurrentNumberScheduled == desired && status.NumberMisscheduled == 0:
		setCondition(status, corev1.ConditionTrue, "Complete", "every node runs an available pod of the update revision", now)
	default:
		setCondition(status, corev1.ConditionTrue, "Progressing", "", now)
	}
}

// setCondition sets Progressing, keeping its transition time unless its
// status changes.
func setCondition(status *appsv1beta1.DaemonSetStatus, s corev1.ConditionStatus, reason, message string, now time.Time) {
	for i := range status.Conditions {
		c := &status.Conditions[i]
		if c.Type != Progressing {
			continue
		}
		if c.Status != s {
			c.LastTransitionTime = metav1.NewTime(now)
		}
		c.Status, c.Reason, c.Message = s, reason, message
		return
	}
	status.Conditions = append(status.Conditions, appsv1.DaemonSetCondition{Type: Progressing, Status: s, Reason: reason, Message: message, LastTransitionTime: metav1.NewTime(now)})
}
