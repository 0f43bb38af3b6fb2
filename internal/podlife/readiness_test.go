package podlife

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
)

var t1 = time.Date(2026, 11, 21, 10, 1, 0, 0, time.UTC)

// gatedPod is a Ready pod with both of our readiness gates, True.
func gatedPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-a", UID: "uid-a"},
		Spec: corev1.PodSpec{
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}, {ConditionType: pub.KruisePodReadyConditionType}},
		},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionTrue},
			{Type: pub.KruisePodReadyConditionType, Status: corev1.ConditionTrue},
		}},
	}
}

func TestKruisePodReady(t *testing.T) {
	withMessage := func(status corev1.ConditionStatus, message string) *corev1.Pod {
		pod := gatedPod()
		pod.Status.Conditions[2].Status, pod.Status.Conditions[2].Message = status, message
		return pod
	}
	const (
		update = `[{"userAgent":"Lifecycle","key":"preUpdateHook"}]`
		both   = `[{"userAgent":"Lifecycle","key":"preDeleteHook"},{"userAgent":"Lifecycle","key":"preUpdateHook"}]`
	)
	for _, c := range []struct {
		name        string
		pod         *corev1.Pod
		lift, add   string
		changed     bool
		status      corev1.ConditionStatus
		wantMessage string
	}{
		{"add to a Ready pod", withMessage(corev1.ConditionTrue, ""), "", pub.PodReadyKeyPreUpdateHook, true, corev1.ConditionFalse, update},
		{"add what is there", withMessage(corev1.ConditionFalse, update), "", pub.PodReadyKeyPreUpdateHook, false, "", ""},
		{"add a second", withMessage(corev1.ConditionFalse, update), "", pub.PodReadyKeyPreDeleteHook, true, corev1.ConditionFalse, both},
		{"lift the last", withMessage(corev1.ConditionFalse, update), pub.PodReadyKeyPreUpdateHook, "", true, corev1.ConditionTrue, "[]"},
		{"lift one of two", withMessage(corev1.ConditionFalse, both), pub.PodReadyKeyPreUpdateHook, "", true, corev1.ConditionFalse, `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]`},
		{"lift what is not there", withMessage(corev1.ConditionTrue, ""), pub.PodReadyKeyPreUpdateHook, "", false, "", ""},
		{"lift and add in one write", withMessage(corev1.ConditionFalse, update), pub.PodReadyKeyPreUpdateHook, pub.PodReadyKeyPreDeleteHook, true, corev1.ConditionFalse, `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cond, changed := kruisePodReady(c.pod, c.lift, c.add, t1)
			if changed != c.changed {
				t.Fatalf("changed = %v, want %v", changed, c.changed)
			}
			if changed && (cond.Status != c.status || cond.Message != c.wantMessage) {
				t.Errorf("condition = %s %q, want %s %q", cond.Status, cond.Message, c.status, c.wantMessage)
			}
		})
	}
	ungated := gatedPod()
	ungated.Spec.ReadinessGates = nil
	if _, changed := kruisePodReady(ungated, "", pub.PodReadyKeyPreDeleteHook, t1); changed {
		t.Error("a pod without the KruisePodReady gate is changed; the condition would not make it NotReady")
	}
}
