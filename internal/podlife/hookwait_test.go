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

func TestHookWarningDue(t *testing.T) {
	const limit = 10 * time.Minute
	named := func(s ...string) map[string]bool {
		m := map[string]bool{}
		for _, x := range s {
			m[x] = true
		}
		return m
	}
	for _, c := range []struct {
		name  string
		stuck []string
		last  HookWarning
		due   bool
		again time.Duration
	}{
		{"none stuck", nil, HookWarning{}, false, 0},
		{"first warning", []string{"a (PreparingDelete)"}, HookWarning{}, true, limit},
		{"the same pods, warned a minute ago", []string{"a (PreparingDelete)"}, HookWarning{At: now.Add(-time.Minute), Named: named("a (PreparingDelete)")}, false, 9 * time.Minute},
		{"the same pods, warned a limit ago", []string{"a (PreparingDelete)"}, HookWarning{At: now.Add(-limit), Named: named("a (PreparingDelete)")}, true, limit},
		{"a pod newly stuck", []string{"a (PreparingDelete)", "b (PreparingUpdate)"}, HookWarning{At: now.Add(-time.Second), Named: named("a (PreparingDelete)")}, true, limit},
		{"a pod stuck in another state", []string{"a (PreparingUpdate)"}, HookWarning{At: now.Add(-time.Second), Named: named("a (PreparingDelete)")}, true, limit},
		{"fewer pods than named", []string{"a (PreparingDelete)"}, HookWarning{At: now.Add(-time.Second), Named: named("a (PreparingDelete)", "b (PreparingUpdate)")}, false, limit - time.Second},
	} {
		due, again := HookWarningDue(c.stuck, c.last, limit, now)
		if due != c.due || again != c.again {
			t.Errorf("%s: due %v, again %v; want %v, %v", c.name, due, again, c.due, c.again)
		}
	}
}
