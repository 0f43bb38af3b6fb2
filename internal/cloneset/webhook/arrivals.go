package webhook

import (
	"context"
	"sync"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Arrivals lets a webhook wait for the manager's cache to show a pod its
// watch has not delivered yet, woken by the informer rather than polling
// it: a scale-up's binds come within milliseconds of each pod's creation,
// hundreds at once, and polling the cache for each would take the CPU the
// informer needs to catch up.
type Arrivals struct {
	mu      sync.Mutex
	waiters map[client.ObjectKey][]chan struct{}
}

// Informer is what Arrivals needs of an informer (controller-runtime's
// cache.Informer has it).
type Informer interface {
	AddEventHandler(toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error)
}

// NewArrivals returns Arrivals woken by informer's adds and updates.
func NewArrivals(informer Informer) (*Arrivals, error) {
	a := &Arrivals{waiters: map[client.ObjectKey][]chan struct{}{}}
	wake := func(obj any) {
		if o, ok := obj.(client.Object); ok {
			a.wake(client.ObjectKeyFromObject(o))
		}
	}
	_, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { wake(obj) },
		UpdateFunc: func(_, obj any) { wake(obj) },
	})
	return a, err
}

func (a *Arrivals) wake(key client.ObjectKey) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, ch := range a.waiters[key] {
		close(ch)
	}
	delete(a.waiters, key)
}

// Await waits up to timeout for seen to report the object under key, and
// reports whether it did. seen reads the cache; it runs once before the
// wait (after the waiter is registered, so no event is missed between the
// two) and once after each wake-up.
func (a *Arrivals) Await(ctx context.Context, key client.ObjectKey, timeout time.Duration, seen func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		ch := make(chan struct{})
		a.mu.Lock()
		a.waiters[key] = append(a.waiters[key], ch)
		a.mu.Unlock()
		if seen() {
			a.forget(key, ch)
			return true
		}
		select {
		case <-ch:
		case <-deadline.C:
			a.forget(key, ch)
			return seen()
		case <-ctx.Done():
			a.forget(key, ch)
			return false
		}
	}
}

func (a *Arrivals) forget(key client.ObjectKey, ch chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	list := a.waiters[key]
	for i, c := range list {
		if c == ch {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(a.waiters, key)
	} else {
		a.waiters[key] = list
	}
}
