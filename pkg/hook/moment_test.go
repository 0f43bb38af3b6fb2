package hook

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
)

var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

const (
	registered = "example.com/registered"
	drain      = "example.com/drain"
)

// hooks are seed 001's and 002's together: a preNormal label, an
// inPlaceUpdate label and a preDelete finalizer.
var hooks = &pub.Lifecycle{
	PreNormal:     &pub.LifecycleHook{LabelsHandler: map[string]string{registered: "true"}},
	InPlaceUpdate: &pub.LifecycleHook{LabelsHandler: map[string]string{registered: "true"}},
	PreDelete:     &pub.LifecycleHook{FinalizersHandler: []string{drain}},
}

func pod(state pub.LifecycleStateType, ready bool, mutate ...func(*corev1.Pod)) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-a", UID: "uid-a",
			Labels:      map[string]string{pub.LifecycleStateKey: string(state), "controller-revision-hash": "web-1"},
			Annotations: map[string]string{pub.LifecycleTimestampKey: now.Add(-time.Minute).Format(time.RFC3339)},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(now.Add(-30 * time.Second))}}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func label(k, v string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Labels[k] = v } }
func finalizer(f string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Finalizers = append(p.Finalizers, f) }
}
func recorded(m Moment) *record { return &record{Moment: m, Revision: "web-1"} }

func TestDue(t *testing.T) {
	for _, c := range []struct {
		name   string
		pod    *corev1.Pod
		last   *record
		want   Moment // "" for nothing due
		set    map[string]string
		remove []string
		addF   []string
		remF   []string
	}{
		{name: "ready, waiting for preNormal", pod: pod(pub.LifecycleStatePreparingNormal, true, label(registered, "false")),
			want: BeforeNormal, set: map[string]string{registered: "true"}},
		{name: "not ready yet, waiting for preNormal", pod: pod(pub.LifecycleStatePreparingNormal, false, label(registered, "false"))},
		{name: "preNormal handlers on, about to go Normal", pod: pod(pub.LifecycleStatePreparingNormal, true, label(registered, "true"))},
		{name: "new pod Normal and Ready", pod: pod(pub.LifecycleStateNormal, true), want: Registered},
		{name: "new pod Normal, not Ready", pod: pod(pub.LifecycleStateNormal, false)},
		{name: "Normal, registered before it went Normal", pod: pod(pub.LifecycleStateNormal, true), last: recorded(BeforeNormal)},
		{name: "Normal, registered", pod: pod(pub.LifecycleStateNormal, true), last: recorded(Registered)},
		{name: "Normal after its update", pod: pod(pub.LifecycleStateNormal, true), last: recorded(AfterUpdate)},
		{name: "Normal again after it was taken out (kept after all)", pod: pod(pub.LifecycleStateNormal, true), last: recorded(BeforeDelete), want: Registered},
		{name: "held for update", pod: pod(pub.LifecycleStatePreparingUpdate, true, label(registered, "true")),
			want: BeforeUpdate, set: map[string]string{registered: "false"}},
		{name: "released for update", pod: pod(pub.LifecycleStatePreparingUpdate, true, label(registered, "false"))},
		{name: "updating", pod: pod(pub.LifecycleStateUpdating, false, label(registered, "false"))},
		{name: "updated, not Ready yet", pod: pod(pub.LifecycleStateUpdated, false, label(registered, "false"))},
		{name: "updated and Ready", pod: pod(pub.LifecycleStateUpdated, true, label(registered, "false")),
			want: AfterUpdate, set: map[string]string{registered: "true"}},
		{name: "held for deletion", pod: pod(pub.LifecycleStatePreparingDelete, false, finalizer(drain), finalizer("other")),
			want: BeforeDelete, remF: []string{drain}},
		{name: "released for deletion", pod: pod(pub.LifecycleStatePreparingDelete, false, finalizer("other"))},
		{name: "being deleted", pod: pod(pub.LifecycleStatePreparingDelete, false, finalizer(drain), func(p *corev1.Pod) {
			p.DeletionTimestamp = &metav1.Time{Time: now}
		})},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, ok := due(c.pod, hooks, c.last, now)
			if !ok {
				if c.want != "" {
					t.Fatalf("nothing due, want %s", c.want)
				}
				return
			}
			if s.moment != c.want {
				t.Fatalf("due %s, want %q", s.moment, c.want)
			}
			if s.revision != "web-1" {
				t.Errorf("revision %q", s.revision)
			}
			if !mapsEqual(s.setLabels, c.set) || !slices.Equal(s.removeLabels, c.remove) ||
				!slices.Equal(s.addFinalizers, c.addF) || !slices.Equal(s.removeFinalizers, c.remF) {
				t.Errorf("release set %v remove %v, finalizers +%v -%v", s.setLabels, s.removeLabels, s.addFinalizers, s.removeFinalizers)
			}
		})
	}
}

// A handler label whose value is not "true" is removed to release, as
// there is no obvious other value; the hook reads it as released.
func TestTakeOffRemovesOtherValues(t *testing.T) {
	h := &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{"example.com/block": "yes"}}}
	s, ok := due(pod(pub.LifecycleStatePreparingDelete, true, label("example.com/block", "yes")), h, nil, now)
	if !ok || s.moment != BeforeDelete || !slices.Equal(s.removeLabels, []string{"example.com/block"}) || len(s.setLabels) != 0 {
		t.Fatalf("%+v %v", s, ok)
	}
}

// Without hooks of its own, an operator still registers new pods.
func TestNoHooksStillRegisters(t *testing.T) {
	if s, ok := due(pod(pub.LifecycleStateNormal, true), nil, nil, now); !ok || s.moment != Registered {
		t.Fatalf("%+v %v", s, ok)
	}
	if _, ok := due(pod(pub.LifecycleStatePreparingUpdate, true, label(registered, "true")), nil, nil, now); ok {
		t.Fatal("an operator without an inPlaceUpdate hook handled one")
	}
}

// The timeout counts from when the moment became due: the state's
// timestamp, or for Registered when the pod became Ready.
func TestDueSince(t *testing.T) {
	s, _ := due(pod(pub.LifecycleStatePreparingUpdate, true, label(registered, "true")), hooks, nil, now)
	if !s.since.Equal(now.Add(-time.Minute)) {
		t.Errorf("since %v", s.since)
	}
	s, _ = due(pod(pub.LifecycleStateNormal, true), hooks, nil, now)
	if !s.since.Equal(now.Add(-30 * time.Second)) {
		t.Errorf("Registered since %v", s.since)
	}
}

func TestValidateName(t *testing.T) {
	for name, ok := range map[string]bool{"registry": true, "seed-001": true, "": false, "Bad Name": false, "a/b": false} {
		if err := validateName(name); (err == nil) != ok {
			t.Errorf("%q: %v", name, err)
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}
