package podexec

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestExpectationsFollowTheCache(t *testing.T) {
	owner := types.NamespacedName{Namespace: "ns", Name: "web"}
	t0 := time.Now()
	e := NewExpectations(time.Minute)
	pod := func(name, rv string, deleting bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv}}
		if deleting {
			p.DeletionTimestamp = &metav1.Time{Time: t0}
		}
		return p
	}
	apiServer := map[string]types.UID{} // what a read around the cache finds
	lookup := func(name string) (types.UID, bool, error) { uid, ok := apiServer[name]; return uid, ok, nil }
	if ok, _, _, _ := e.Satisfied(owner, nil, lookup, t0); !ok {
		t.Fatal("no expectations, not satisfied")
	}
	apiServer["web-a"] = "uid-a"
	e.ExpectCreated(owner, created("web-a", "uid-a"), t0)
	e.ExpectDeleted(owner, "web-b", t0)
	e.ExpectChanged(owner, "web-c", "7", "9", t0)

	cache := []*corev1.Pod{pod("web-b", "3", false), pod("web-c", "7", false)}
	if ok, waiting, _, _ := e.Satisfied(owner, cache, lookup, t0); ok || waiting == "" {
		t.Fatal("satisfied before the cache saw anything")
	}
	cache = []*corev1.Pod{pod("web-a", "1", false), pod("web-b", "4", true), pod("web-c", "7", false)}
	if ok, waiting, _, _ := e.Satisfied(owner, cache, lookup, t0); ok || waiting != "pod web-c to be updated in the cache" {
		t.Fatalf("waiting = %q", waiting)
	}
	// A kubelet write between the pod's version 7 and ours (9) is not ours.
	cache[2] = pod("web-c", "8", false)
	if ok, waiting, _, _ := e.Satisfied(owner, cache, lookup, t0); ok || waiting != "pod web-c to be updated in the cache" {
		t.Fatalf("satisfied by a write that was not ours; waiting = %q", waiting)
	}
	cache[2] = pod("web-c", "10", false)
	if ok, _, _, _ := e.Satisfied(owner, cache, lookup, t0); !ok {
		t.Fatal("not satisfied once the cache caught up")
	}
	// Met expectations are gone: the pod disappearing later changes nothing.
	if ok, _, _, _ := e.Satisfied(owner, nil, lookup, t0); !ok {
		t.Fatal("met expectations came back")
	}

	// A pod created and deleted again before the cache showed it: the
	// cache may never show it, so once its event is overdue it is looked
	// up, and not waited for. A fresh one is awaited without a read.
	later := t0.Add(freshCreate)
	e.ExpectCreated(owner, created("web-y", "uid-y"), t0)
	reads := 0
	counted := func(name string) (types.UID, bool, error) { reads++; return lookup(name) }
	if ok, _, _, _ := e.Satisfied(owner, nil, counted, t0); ok || reads != 0 {
		t.Fatalf("a fresh creation: ok %v after %d reads; want waiting, no read", ok, reads)
	}
	if ok, _, _, _ := e.Satisfied(owner, nil, lookup, later); !ok {
		t.Fatal("waiting for a pod that is already gone")
	}
	// One replaced by a pod of the same name, likewise.
	apiServer["web-x"] = "uid-x2"
	e.ExpectCreated(owner, created("web-x", "uid-x1"), t0)
	if ok, _, _, _ := e.Satisfied(owner, nil, lookup, later); !ok {
		t.Fatal("waiting for a pod replaced under the same name")
	}

	apiServer["web-z"] = "uid-z"
	e.ExpectCreated(owner, created("web-z", "uid-z"), t0)
	if ok, _, _, _ := e.Satisfied(owner, nil, lookup, later); ok {
		t.Fatal("satisfied while the pod exists but the cache lags")
	}
	if ok, _, expired, _ := e.Satisfied(owner, nil, lookup, t0.Add(2*time.Minute)); !ok || expired != 1 {
		t.Fatalf("an expectation past the timeout: ok %v, expired %d", ok, expired)
	}
}

func TestExpectationsLookUpOnePodAtATime(t *testing.T) {
	owner := types.NamespacedName{Namespace: "ns", Name: "web"}
	t0 := time.Now()
	e := NewExpectations(time.Minute)
	lookups := 0
	lookup := func(string) (types.UID, bool, error) { lookups++; return "uid", true, nil }
	for i := 0; i < 500; i++ {
		e.ExpectCreated(owner, created(fmt.Sprintf("web-%03d", i), "uid"), t0)
	}
	if ok, _, _, _ := e.Satisfied(owner, nil, lookup, t0.Add(freshCreate)); ok || lookups != 1 {
		t.Fatalf("ok %v after %d reads around the cache; want waiting after 1", ok, lookups)
	}
}

func TestSeenWrite(t *testing.T) {
	for _, c := range []struct {
		cached, before, written string
		want                    bool
	}{
		{"7", "7", "9", false},
		{"8", "7", "9", false},
		{"9", "7", "9", true},
		{"12", "7", "9", true},   // later writes on top of ours
		{"x2", "x1", "x3", true}, // versions that do not compare: any change counts
		{"x1", "x1", "x3", false},
	} {
		if got := seenWrite(c.cached, c.before, c.written); got != c.want {
			t.Errorf("seenWrite(%q, %q, %q) = %v, want %v", c.cached, c.before, c.written, got, c.want)
		}
	}
}

// TestSlowLookupStallsNoOtherOwner: the read around the cache for one
// CloneSet's unseen pod is a network call; while it hangs, another
// CloneSet's expectations are still checked at once, since no lock is held
// across the read.
func TestSlowLookupStallsNoOtherOwner(t *testing.T) {
	slow, other := types.NamespacedName{Namespace: "ns", Name: "slow"}, types.NamespacedName{Namespace: "ns", Name: "other"}
	created0 := time.Now()
	now := created0.Add(freshCreate)
	e := NewExpectations(time.Minute)
	e.ExpectCreated(slow, created("slow-a", "uid-a"), created0)
	e.ExpectDeleted(other, "other-a", now)

	inLookup, release := make(chan struct{}), make(chan struct{})
	slowDone := make(chan bool)
	go func() {
		ok, _, _, _ := e.Satisfied(slow, nil, func(string) (types.UID, bool, error) {
			close(inLookup)
			<-release
			return "", false, nil // gone meanwhile
		}, now)
		slowDone <- ok
	}()
	<-inLookup
	otherDone := make(chan bool)
	go func() {
		ok, _, _, _ := e.Satisfied(other, nil, nil, now)
		otherDone <- ok
	}()
	select {
	case ok := <-otherDone:
		if !ok {
			t.Error("the other CloneSet's deleted pod is gone from the cache, yet not satisfied")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a hanging read for one CloneSet stalled another's expectations")
	}
	close(release)
	if !<-slowDone {
		t.Error("a created pod that is gone again still awaited")
	}
	if ok, _, _, _ := e.Satisfied(slow, nil, nil, now); !ok {
		t.Error("the gone pod's expectation was kept")
	}
}

// created is a create's answer: the pod named name, with uid.
func created(name string, uid types.UID) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid, ResourceVersion: "1"}}
}

// A pod the controller created is handed out as created until the cache
// shows it, and only under its own namespace and name.
func TestExpectationsHandOutCreatedPods(t *testing.T) {
	owner := types.NamespacedName{Namespace: "ns", Name: "web"}
	t0 := time.Now()
	e := NewExpectations(time.Minute)
	pod := created("web-a", "uid-a")
	e.ExpectCreated(owner, pod, t0)
	e.ExpectDeleted(owner, "web-b", t0)
	ctx := context.Background()
	if got, ok := e.Created(ctx, types.NamespacedName{Namespace: "ns", Name: "web-a"}, 0); !ok || got != pod {
		t.Fatalf("Created(ns/web-a) = %v, %v; want the create's answer", got, ok)
	}
	for _, key := range []types.NamespacedName{{Namespace: "other", Name: "web-a"}, {Namespace: "ns", Name: "web-b"}, {Namespace: "ns", Name: "web-c"}} {
		if _, ok := e.Created(ctx, key, time.Hour); ok {
			t.Errorf("Created(%s) found a pod", key)
		}
	}
	lookup := func(string) (types.UID, bool, error) { return "uid-a", true, nil }
	if ok, _, _, _ := e.Satisfied(owner, []*corev1.Pod{pod}, lookup, t0); !ok {
		t.Fatal("not satisfied once the cache shows the pod")
	}
	if _, ok := e.Created(ctx, types.NamespacedName{Namespace: "ns", Name: "web-a"}, 0); ok {
		t.Error("a pod the cache shows is still handed out as created")
	}
}

// A lookup that overtakes the create's answer waits for it, and one of a
// create that failed or never answers gives up.
func TestExpectationsWaitForTheCreatesAnswer(t *testing.T) {
	owner := types.NamespacedName{Namespace: "ns", Name: "web"}
	ctx := context.Background()
	e := NewExpectations(time.Minute)
	pod := created("web-a", "uid-a")
	key := types.NamespacedName{Namespace: "ns", Name: "web-a"}
	e.ExpectCreating(key)
	go e.ExpectCreated(owner, pod, time.Now())
	if got, ok := e.Created(ctx, key, time.Hour); !ok || got != pod {
		t.Fatalf("Created during the create = %v, %v; want the answer", got, ok)
	}

	failed := types.NamespacedName{Namespace: "ns", Name: "web-b"}
	e.ExpectCreating(failed)
	go e.CreateFailed(failed)
	if _, ok := e.Created(ctx, failed, time.Hour); ok {
		t.Fatal("a failed create handed out a pod")
	}
	slow := types.NamespacedName{Namespace: "ns", Name: "web-c"}
	e.ExpectCreating(slow)
	start := time.Now()
	if _, ok := e.Created(ctx, slow, 10*time.Millisecond); ok || time.Since(start) < 10*time.Millisecond {
		t.Fatalf("a create that never answers: found %v after %s; want not found after the wait", ok, time.Since(start))
	}
}
