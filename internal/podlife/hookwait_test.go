package podlife

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
)

var now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func TestWaitingOnHooks(t *testing.T) {
	since := func(d time.Duration) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Annotations = map[string]string{pub.LifecycleTimestampKey: now.Add(-d).Format(time.RFC3339)}
		}
	}
	pod := func(name string, state pub.LifecycleStateType, mutate func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-" + name, Labels: map[string]string{pub.LifecycleStateKey: string(state)}}}
		mutate(p)
		return p
	}
	pods := []*corev1.Pod{
		pod("old", pub.LifecycleStatePreparingDelete, since(20*time.Minute)),
		pod("young", pub.LifecycleStatePreparingUpdate, since(4*time.Minute)),
		pod("normal", pub.LifecycleStateNormal, since(time.Hour)),
	}
	stuck, next := WaitingOnHooks(pods, 10*time.Minute, now)
	if len(stuck) != 1 || stuck[0] != "web-old (PreparingDelete)" || next != 6*time.Minute {
		t.Errorf("stuck %v, next %v", stuck, next)
	}
	if s, _ := WaitingOnHooks(pods, 0, now); s != nil {
		t.Error("a zero limit reports pods")
	}
}
