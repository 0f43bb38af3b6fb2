package podexec

import (
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// Expectations remember what a controller did that its informer cache
// has not shown yet: pods it created, deleted or patched. A reconcile that
// planned from a cache missing its own writes would create or delete twice,
// so the controller plans only once every expectation is met.
//
// Expectations are checked against the pods the cache holds, not counted
// from events, so they never drift, and a restarted controller, whose cache
// is fresh, needs none.
type Expectations struct {
	mu      sync.Mutex
	timeout time.Duration
	byOwner map[types.NamespacedName]map[string]expectation
	// creating are the pods whose creates are in flight, by key; each
	// channel closes when its create answers or fails (see created.go).
	creating map[types.NamespacedName]chan struct{}
}

type expectationKind int

const (
	expectCreated expectationKind = iota
	expectDeleted
	expectChanged
)

type expectation struct {
	kind expectationKind
	// before and written are, for expectChanged, the pod's resourceVersion
	// before the write and the one the write produced.
	before, written string
	// uid is, for expectCreated, the UID of the created pod, and pod the
	// create's answer, which no one changes (see Created).
	uid   types.UID
	pod   *corev1.Pod
	since time.Time
}

// PodLookup reads a pod around the cache: its UID, or found=false.
type PodLookup func(name string) (uid types.UID, found bool, err error)

func NewExpectations(timeout time.Duration) *Expectations {
	return &Expectations{timeout: timeout, byOwner: map[types.NamespacedName]map[string]expectation{},
		creating: map[types.NamespacedName]chan struct{}{}}
}

func (e *Expectations) expect(owner types.NamespacedName, pod string, x expectation) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.expectLocked(owner, pod, x)
}

// expectLocked is expect for a caller that holds the lock.
func (e *Expectations) expectLocked(owner types.NamespacedName, pod string, x expectation) {
	if e.byOwner[owner] == nil {
		e.byOwner[owner] = map[string]expectation{}
	}
	e.byOwner[owner][pod] = x
}

// ExpectDeleted records that pod was deleted.
func (e *Expectations) ExpectDeleted(owner types.NamespacedName, pod string, now time.Time) {
	e.expect(owner, pod, expectation{kind: expectDeleted, since: now})
}

// ExpectChanged records that pod, at resourceVersion before, was written,
// producing resourceVersion written.
func (e *Expectations) ExpectChanged(owner types.NamespacedName, pod, before, written string, now time.Time) {
	e.expect(owner, pod, expectation{kind: expectChanged, before: before, written: written, since: now})
}

// Forget drops every expectation of owner, e.g. when it is deleted.
func (e *Expectations) Forget(owner types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.byOwner, owner)
}

// Satisfied checks owner's expectations against the pods the cache holds
// (every owned pod, terminating ones included), drops those met, and says
// what is still awaited. A created pod the cache does not hold is looked up
// around the cache: if it is already gone again (deleted by someone else
// before the cache caught up), waiting for it would be waiting for ever.
// Expectations older than the timeout are dropped too and counted as
// expired: a write the cache never shows must not wedge the CloneSet.
//
// The lock is never held across a lookup, which is a network read: every
// worker of every CloneSet shares it. One owner is checked by one worker at
// a time (the workqueue never hands a key to two), so its expectations
// cannot change between the check and the lookups but by a Forget.
func (e *Expectations) Satisfied(owner types.NamespacedName, cached []*corev1.Pod, lookup PodLookup, now time.Time) (ok bool, waiting string, expired int, err error) {
	byName := make(map[string]*corev1.Pod, len(cached))
	for _, p := range cached {
		byName[p.Name] = p
	}
	e.mu.Lock()
	waiting, expired, unseen := e.check(owner, byName, now)
	e.mu.Unlock()

	// Look unseen pods up around the cache only while nothing else is
	// awaited, and stop at the first that exists: a lagging cache after a
	// batch of creations costs one read, not one per pod.
	var gone []unseenPod
	for _, u := range unseen {
		if waiting != "" {
			break
		}
		exists := true
		if lookup != nil {
			uid, found, err := lookup(u.name)
			if err != nil {
				return false, "", expired, err
			}
			exists = found && uid == u.uid
		}
		if exists {
			waiting = fmt.Sprintf("pod %s to be created in the cache", u.name)
		} else {
			gone = append(gone, u)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	pending := e.byOwner[owner]
	for _, u := range gone {
		if x, ok := pending[u.name]; ok && x.kind == expectCreated && x.uid == u.uid {
			delete(pending, u.name)
		}
	}
	if pending != nil && len(pending) == 0 {
		delete(e.byOwner, owner)
	}
	return waiting == "", waiting, expired, nil
}

// freshCreate is how long a created pod the cache does not show is simply
// awaited before it is looked up around the cache.
const freshCreate = time.Second

// unseenPod is a created pod the cache does not show yet.
type unseenPod struct {
	name string
	uid  types.UID
}

// check drops owner's expectations the cached pods meet or that expired,
// and returns the first one still awaited and the created pods the cache
// does not show, by name. The caller holds the lock.
func (e *Expectations) check(owner types.NamespacedName, byName map[string]*corev1.Pod, now time.Time) (waiting string, expired int, unseen []unseenPod) {
	pending := e.byOwner[owner]
	for name, x := range pending {
		pod, found := byName[name]
		met := false
		switch x.kind {
		case expectCreated:
			met = found
			if !found && now.Sub(x.since) < freshCreate {
				// Its watch event is on its way; a lookup now would cost
				// a read per pod created.
				if waiting == "" {
					waiting = fmt.Sprintf("pod %s to be created in the cache", name)
				}
				continue
			}
			if !found && now.Sub(x.since) <= e.timeout {
				unseen = append(unseen, unseenPod{name: name, uid: x.uid})
				continue
			}
		case expectDeleted:
			met = !found || pod.DeletionTimestamp != nil
		case expectChanged:
			met = !found || seenWrite(pod.ResourceVersion, x.before, x.written)
		}
		switch {
		case met:
			delete(pending, name)
		case now.Sub(x.since) > e.timeout:
			delete(pending, name)
			expired++
		case waiting == "":
			waiting = fmt.Sprintf("pod %s to be %s in the cache", name, [...]string{"created", "deleted", "updated"}[x.kind])
		}
	}
	sort.Slice(unseen, func(i, j int) bool { return unseen[i].name < unseen[j].name })
	if pending != nil && len(pending) == 0 {
		delete(e.byOwner, owner)
	}
	return waiting, expired, unseen
}

// seenWrite reports whether a cached pod at resourceVersion cached shows a
// write that took the pod from before to written. Resource versions are
// comparable since Kubernetes 1.35 (KEP-5504); a cache that moved past
// before but not up to written (a kubelet write between two of ours) is
// still behind. Where versions do not compare, any change counts.
func seenWrite(cached, before, written string) bool {
	if c, err := resourceversion.CompareResourceVersion(cached, written); err == nil {
		return c >= 0
	}
	return cached != before
}
