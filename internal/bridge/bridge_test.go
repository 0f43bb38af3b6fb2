package bridge

import (
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	"github.com/lifeline-k8s/lifeline/pkg/hook"
)

var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// view is a pod of CloneSet web, Ready, in state, whose last moment of the
// bridge is last ("" for none).
func view(name, uid string, state pub.LifecycleStateType, last hook.Moment, mutate ...func(*corev1.Pod)) podView {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(uid),
			Labels:      map[string]string{pub.LifecycleStateKey: string(state)},
			Annotations: map[string]string{}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	if last != "" {
		pod.Annotations[hook.AnnotationPrefix+"registry"] = `{"moment":"` + string(last) + `","revision":"r1"}`
	}
	for _, m := range mutate {
		m(pod)
	}
	inst, err := instanceOf(pod, "web", 80, "")
	return podView{pod: pod, inst: inst, instErr: err}
}

func ids[T any](items []T, id func(T) string) []string {
	var out []string
	for _, i := range items {
		out = append(out, id(i))
	}
	sort.Strings(out)
	return out
}

func TestPlanReconcile(t *testing.T) {
	pods := []podView{
		view("kept", "u1", pub.LifecycleStateNormal, hook.Registered),
		view("replaced", "u2-new", pub.LifecycleStatePreparingNormal, ""),
		view("draining", "u3", pub.LifecycleStatePreparingDelete, hook.Registered),
		view("expired", "u4", pub.LifecycleStateNormal, hook.AfterUpdate),
		view("new", "u5", pub.LifecycleStateNormal, ""),
		view("updating", "u6", pub.LifecycleStateUpdating, hook.BeforeUpdate),
		view("held-for-update", "u7", pub.LifecycleStatePreparingUpdate, hook.Registered),
		view("unready", "u8", pub.LifecycleStateNormal, hook.Registered, func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }),
		view("no-ip", "u9", pub.LifecycleStateNormal, hook.Registered, func(p *corev1.Pod) { p.Status.PodIP = "" }),
	}
	entries := []Entry{
		{ID: "ns/web/kept", UID: "u1"},
		{ID: "ns/web/replaced", UID: "u2-old"},
		{ID: "ns/web/draining", UID: "u3"},
		{ID: "ns/web/gone", UID: "u0"},
		{ID: "ns/web/updating", UID: "u6"}, // its BeforeUpdate is under way: not the reconcile's to take out
	}
	remove, restore := planReconcile(entries, pods, "registry", now)
	if got, want := ids(remove, func(e Entry) string { return e.ID }), []string{"ns/web/gone", "ns/web/replaced"}; !equal(got, want) {
		t.Errorf("remove %v, want %v", got, want)
	}
	// Only a Ready, Normal pod the bridge registered last gets its entry
	// back; a new pod waits for its Registered moment.
	if got, want := ids(restore, func(p podView) string { return p.inst.ID() }), []string{"ns/web/expired"}; !equal(got, want) {
		t.Errorf("restore %v, want %v", got, want)
	}
}

func TestSplitID(t *testing.T) {
	for id, ok := range map[string]bool{"ns/web/pod": true, "ns//pod": true, "ns/web": false, "ns/web/pod/x": false, "/web/pod": false} {
		if _, _, _, got := splitID(id); got != ok {
			t.Errorf("%q: %v", id, got)
		}
	}
}

// A handler and the reconcile never hold one instance at once; other
// instances go on.
func TestKeyedMutex(t *testing.T) {
	var k keyedMutex
	unlock := k.lock("a")
	done := make(chan struct{})
	go func() { defer close(done); k.lock("b")() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a lock on a held b")
	}
	var mu sync.Mutex
	order := []string{}
	got := make(chan struct{})
	go func() {
		u := k.lock("a")
		mu.Lock()
		order = append(order, "second")
		mu.Unlock()
		u()
		close(got)
	}()
	mu.Lock()
	order = append(order, "first")
	mu.Unlock()
	unlock()
	<-got
	if !equal(order, []string{"first", "second"}) {
		t.Errorf("order %v", order)
	}
	if len(k.locks) != 0 {
		t.Errorf("locks left: %v", k.locks)
	}
}

func TestObserve(t *testing.T) {
	if err := observe("x", errors.New("boom")); err == nil {
		t.Fatal("observe swallowed the error")
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// An entry at an address the pod no longer has is written again; one at
// the pod's address is left alone.
func TestPlanReconcileCorrectsAddresses(t *testing.T) {
	moved := view("moved", "u1", pub.LifecycleStateNormal, hook.Registered)
	same := view("same", "u2", pub.LifecycleStateNormal, hook.Registered)
	entries := []Entry{
		{ID: "ns/web/moved", UID: "u1", IP: "10.0.0.9", Port: 80},
		{ID: "ns/web/same", UID: "u2", IP: "10.0.0.1", Port: 80},
	}
	remove, restore := planReconcile(entries, []podView{moved, same}, "registry", now)
	if len(remove) != 0 || len(restore) != 1 || restore[0].inst.Pod != "moved" || !restore[0].stale {
		t.Fatalf("remove %v, restore %+v", remove, restore)
	}
}
