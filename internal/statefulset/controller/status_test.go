package controller

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
	"github.com/lifeline-k8s/lifeline/internal/statefulset/planner"
)

// Progressing goes False only for a wait on someone else; a rollout
// pacing itself stays True, so its status is not rewritten at each pod.
func TestProgressing(t *testing.T) {
	set := &appsv1beta1.StatefulSet{}
	set.Spec.Replicas = ptr.To[int32](3)
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name           string
		plan           planner.Plan
		status         appsv1beta1.StatefulSetStatus
		want           corev1.ConditionStatus
		reason, msgHas string
	}{
		{"maxUnavailable in use", planner.Plan{Pace: podlife.Pace{Waiting: "2 of maxUnavailable 2 pods are unavailable"}},
			appsv1beta1.StatefulSetStatus{Replicas: 3, UpdatedReplicas: 1}, corev1.ConditionTrue, "Progressing", ""},
		{"a hook holds a pod", planner.Plan{Pace: podlife.Pace{Waiting: "pod db-2 waits in PreparingDelete for its preDelete hook", Blocked: "HookWaiting"}},
			appsv1beta1.StatefulSetStatus{Replicas: 3}, corev1.ConditionFalse, "HookWaiting", "db-2"},
		{"blocked but acting elsewhere", planner.Plan{Pace: podlife.Pace{Waiting: "w", Blocked: "HookWaiting"}, Actions: []podlife.Action{podlife.CreatePod{}}},
			appsv1beta1.StatefulSetStatus{Replicas: 3}, corev1.ConditionTrue, "Progressing", ""},
		{"paused", planner.Plan{Pace: podlife.Pace{Waiting: "the rollout is paused", Blocked: "Paused"}},
			appsv1beta1.StatefulSetStatus{Replicas: 3}, corev1.ConditionFalse, "Paused", "paused"},
		{"complete", planner.Plan{}, appsv1beta1.StatefulSetStatus{Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3}, corev1.ConditionTrue, "Complete", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := c.status
			setProgressing(&st, set, c.plan, now)
			if len(st.Conditions) != 1 {
				t.Fatalf("conditions %+v", st.Conditions)
			}
			got := st.Conditions[0]
			if got.Status != c.want || got.Reason != c.reason || (c.msgHas != "" && !contains(got.Message, c.msgHas)) {
				t.Errorf("got %s %s %q, want %s %s ~%q", got.Status, got.Reason, got.Message, c.want, c.reason, c.msgHas)
			}
		})
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
