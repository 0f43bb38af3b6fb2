package controller

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodChange(t *testing.T) {
	ready := func(rv string, m ...func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv, Labels: map[string]string{"app": "a"}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
		for _, f := range m {
			f(p)
		}
		return p
	}
	deleting := func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: time.Now()} }
	notReady := func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }
	for name, c := range map[string]struct {
		old, updated *corev1.Pod
		matters      bool
		after        time.Duration
	}{
		"resync":              {ready("1"), ready("1"), false, 0},
		"annotation only":     {ready("1"), ready("2", func(p *corev1.Pod) { p.Annotations = map[string]string{"a": "b"} }), false, 0},
		"became unready":      {ready("1"), ready("2", notReady), true, 0},
		"became ready":        {ready("1", notReady), ready("2"), true, 0},
		"relabelled":          {ready("1"), ready("2", func(p *corev1.Pod) { p.Labels["app"] = "b" }), true, 0},
		"started terminating": {ready("1"), ready("2", deleting), true, deletionDelay},
		"still terminating":   {ready("1", deleting), ready("2", deleting, notReady), false, 0},
	} {
		matters, after := PodChange(c.old, c.updated)
		if matters != c.matters || after != c.after {
			t.Errorf("%s: %v after %s, want %v after %s", name, matters, after, c.matters, c.after)
		}
	}
}
