package podexec

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The pods a controller creates are also what the pod binding webhook
// (internal/cloneset/webhook) needs to know moments after each create,
// before the manager's watch has delivered the pod: under load a third of
// a scale-up's binds came first (11-25). The create's answer tells the
// webhook what the pod was at its creation, with the resourceVersion that
// proves it, and an in-flight create tells it to wait for the answer
// rather than for the watch.

// ExpectCreating records that the create of the pod under key is about to
// be sent. ExpectCreated or CreateFailed ends it.
func (e *Expectations) ExpectCreating(key types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.creating[key]; !ok {
		e.creating[key] = make(chan struct{})
	}
}

// CreateFailed ends an in-flight create that created nothing.
func (e *Expectations) CreateFailed(key types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.answered(key)
}

// ExpectCreated records that pod was created: pod is the create's answer,
// which the caller must not change afterwards (Created hands it out).
func (e *Expectations) ExpectCreated(owner types.NamespacedName, pod *corev1.Pod, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	// In one critical section: a bind waiting for the answer finds the
	// pod recorded the moment it wakes.
	e.expectLocked(owner, pod.Name, expectation{kind: expectCreated, uid: pod.UID, pod: pod, since: now})
	e.answered(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
}

// answered ends the in-flight create of key. The caller holds the lock.
func (e *Expectations) answered(key types.NamespacedName) {
	if ch, ok := e.creating[key]; ok {
		close(ch)
		delete(e.creating, key)
	}
}

// Created returns the pod under key as its create answered, while the
// cache may not show it yet, waiting up to wait for the answer of a create
// in flight: the pod at its creation, with the resourceVersion that proves
// it (a write conditioned on that version applies only if no one changed
// the pod since). Callers must not change it. found=false: this controller
// has no record of creating the pod (or its create did not answer in
// time, or the cache shows it by now).
func (e *Expectations) Created(ctx context.Context, key types.NamespacedName, wait time.Duration) (pod *corev1.Pod, found bool) {
	e.mu.Lock()
	ch, inFlight := e.creating[key]
	e.mu.Unlock()
	if inFlight {
		timer := time.NewTimer(wait)
		select {
		case <-ch:
		case <-timer.C:
		case <-ctx.Done():
		}
		timer.Stop()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for owner, pending := range e.byOwner {
		if owner.Namespace != key.Namespace {
			continue
		}
		if x, ok := pending[key.Name]; ok && x.kind == expectCreated && x.pod != nil {
			return x.pod, true
		}
	}
	return nil, false
}
