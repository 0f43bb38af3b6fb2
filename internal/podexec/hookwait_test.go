package podexec

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
)

// A workload planned again and again while a pod stays held gets one
// Warning per limit, not one per reconcile; a pod newly held is warned
// of at once, and a workload with none held starts afresh.
func TestWarnHookWaitsOncePerLimit(t *testing.T) {
	e, _, w := testbed()
	rec := events.NewFakeRecorder(100)
	e.Recorder = rec
	const limit = 2 * time.Second
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	held := func(name string, since time.Time) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{pub.LifecycleStateKey: string(pub.LifecycleStatePreparingDelete)},
			Annotations: map[string]string{pub.LifecycleTimestampKey: since.Format(time.RFC3339)}}}
	}
	a, b := held("web-a", start), held("web-b", start.Add(10*time.Second))
	posted := func() int { return len(rec.Events) }
	at := func(d time.Duration, pods ...*corev1.Pod) time.Duration {
		return e.WarnHookWaits(w.obj, pods, limit, start.Add(d))
	}

	if next := at(time.Second, a); posted() != 0 || next != 2*time.Second {
		t.Fatalf("before the limit: %d posted, next in %v; want none, in 2s", posted(), next)
	}
	for ms := 3000; ms < 5000; ms += 100 { // a reconcile every 100ms
		at(time.Duration(ms)*time.Millisecond, a)
	}
	if posted() != 1 {
		t.Fatalf("%d Warnings in two seconds of reconciles past the limit, want 1", posted())
	}
	if next := at(5*time.Second, a); posted() != 2 || next != limit+time.Second {
		t.Fatalf("a limit after the first: %d posted, next in %v; want 2, in %v", posted(), next, limit+time.Second)
	}
	at(13*time.Second, a, b)
	if posted() != 3 {
		t.Fatalf("a pod newly held past the limit: %d posted, want 3", posted())
	}
	at(14 * time.Second) // released
	at(14*time.Second, a, b)
	if posted() != 4 {
		t.Fatalf("held again after none was: %d posted, want 4", posted())
	}
}
