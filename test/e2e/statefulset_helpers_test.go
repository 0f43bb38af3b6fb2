package e2e

import (
	"context"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// podLog records, with a watch of its own, every pod event of a namespace
// in order: what the tests hold the controller's order to.
type podLog struct {
	mu     sync.Mutex
	events []podEvent
}

type podEvent struct {
	typ  watch.EventType
	pod  *corev1.Pod
	when time.Time
}

func logPods(t *testing.T, ns string) *podLog {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l := &podLog{}
	go func() {
		for ev := range w.ResultChan() {
			if pod, ok := ev.Object.(*corev1.Pod); ok {
				l.mu.Lock()
				l.events = append(l.events, podEvent{typ: ev.Type, pod: pod, when: time.Now()})
				l.mu.Unlock()
			}
		}
	}()
	return l
}

func (l *podLog) all() []podEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// order lists the pods in the order of their first event of kind match.
func (l *podLog) order(match func(podEvent) bool) []string { return l.orderSince(0, match) }

// mark is where the log is now, for orderSince.
func (l *podLog) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.events)
}

// orderSince is order over the events after mark.
func (l *podLog) orderSince(mark int, match func(podEvent) bool) []string {
	var out []string
	for _, ev := range l.all()[mark:] {
		if match(ev) && !slices.Contains(out, ev.pod.Name) {
			out = append(out, ev.pod.Name)
		}
	}
	return out
}

// mostNotReady is the most pods the log saw not Ready (or gone) at once
// among those named, once all had been Ready.
func (l *podLog) mostNotReady(names []string) int {
	ready := map[string]bool{}
	most, started := 0, false
	for _, ev := range l.all() {
		if !slices.Contains(names, ev.pod.Name) {
			continue
		}
		ready[ev.pod.Name] = ev.typ != watch.Deleted && ev.pod.DeletionTimestamp == nil && podCondition(ev.pod, corev1.PodReady) == corev1.ConditionTrue
		n := 0
		for _, name := range names {
			if !ready[name] {
				n++
			}
		}
		started = started || n == 0
		if started {
			most = max(most, n)
		}
	}
	return most
}

func isCreate(ev podEvent) bool { return ev.typ == watch.Added }
func isDelete(ev podEvent) bool { return ev.typ == watch.Deleted || ev.pod.DeletionTimestamp != nil }

// readyBefore reports whether the log saw name Ready before t.
func readyBefore(events []podEvent, name string, t time.Time) bool {
	for _, ev := range events {
		if ev.pod.Name == name && ev.when.Before(t) && podCondition(ev.pod, corev1.PodReady) == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func stsPodNames(t *testing.T, ns string) []string {
	t.Helper()
	list, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			names = append(names, p.Name)
		}
	}
	sort.Strings(names)
	return names
}
