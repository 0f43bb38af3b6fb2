package planner

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
)

func TestWaitingOnHooks(t *testing.T) {
	since := func(d time.Duration) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Annotations = map[string]string{pub.LifecycleTimestampKey: now.Add(-d).Format(time.RFC3339)}
		}
	}
	pods := []*corev1.Pod{
		readyPod("old", newRev, inState(pub.LifecycleStatePreparingDelete), since(20*time.Minute)),
		readyPod("young", newRev, inState(pub.LifecycleStatePreparingUpdate), since(4*time.Minute)),
		readyPod("normal", newRev, since(time.Hour)),
	}
	stuck, next := WaitingOnHooks(pods, 10*time.Minute, now)
	if len(stuck) != 1 || stuck[0] != "web-old (PreparingDelete)" || next != 6*time.Minute {
		t.Errorf("stuck %v, next %v", stuck, next)
	}
	if s, _ := WaitingOnHooks(pods, 0, now); s != nil {
		t.Error("a zero limit reports pods")
	}
}
