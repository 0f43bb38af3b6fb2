package podcache

import (
	"context"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// filter is the pod informer's list and watch: it passes the pods the
// scope caches and turns the events of a pod that leaves the scope into
// its deletion. Its state (guarded by the scope's lock) is what the
// informer has been given: which namespaces are covered whole, which pods
// passed, and, per namespace not yet synced, what the informer must hold
// once it has taken everything in (key to resource version, "" for gone).
type filter struct {
	scope   *Scope
	inner   toolscache.ListerWatcherWithContext
	indexer toolscache.Indexer

	covered map[string]bool
	passed  map[string]struct{}
	pending map[string]map[string]string

	// The list in progress, over its pages (see List).
	listing struct {
		covered map[string]bool
		passed  map[string]struct{}
		pods    map[string]map[string]string
	}
}

func newFilter(s *Scope, inner toolscache.ListerWatcherWithContext) *filter {
	return &filter{scope: s, inner: inner, covered: map[string]bool{}, passed: map[string]struct{}{}, pending: map[string]map[string]string{}}
}

// IsWatchListSemanticsUnSupported keeps the reflector on list and watch:
// the filter marks namespaces covered at a list's end and places a
// namespace's pods at a resource version of the watch, neither of which a
// watch-list stream's unordered initial events would allow.
func (f *filter) IsWatchListSemanticsUnSupported() bool { return true }

// passesLocked reports whether pod is cached given the covered namespaces.
func (f *filter) passesLocked(pod *corev1.Pod, covered map[string]bool) bool {
	return covered[pod.Namespace] || f.scope.owns(metav1.GetControllerOfNoCopy(pod))
}

// ListWithContext lists through the inner lister and keeps the pods in
// scope. The namespaces held when a list starts are covered by it; the
// state is replaced when its last page is in, as the informer's is.
func (f *filter) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	s := f.scope
	if opts.Continue == "" {
		s.mu.Lock()
		f.listing.covered, _ = s.heldLocked()
		f.listing.passed, f.listing.pods = map[string]struct{}{}, map[string]map[string]string{}
		s.mu.Unlock()
	}
	obj, err := f.inner.ListWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	list, ok := obj.(*corev1.PodList)
	if !ok {
		return obj, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	kept := list.Items[:0]
	for i := range list.Items {
		pod := &list.Items[i]
		if !f.passesLocked(pod, f.listing.covered) {
			continue
		}
		key := pod.Namespace + "/" + pod.Name
		f.listing.passed[key] = struct{}{}
		if f.listing.covered[pod.Namespace] {
			put(f.listing.pods, pod.Namespace, key, pod.ResourceVersion)
		}
		kept = append(kept, *pod)
	}
	clear(list.Items[len(kept):])
	list.Items = kept
	if list.Continue == "" {
		f.commitListLocked()
	}
	return list, nil
}

// commitListLocked makes a complete list the filter's state. A namespace
// synced before stays so (the cache showed all of it, and the list only
// refreshes it); one the list brings in is pending until the informer
// holds what the list gave.
func (f *filter) commitListLocked() {
	pending := map[string]map[string]string{}
	for ns := range f.listing.covered {
		if f.covered[ns] && f.pending[ns] == nil {
			continue
		}
		if pods := f.listing.pods[ns]; len(pods) > 0 {
			pending[ns] = pods
		}
	}
	f.covered, f.passed, f.pending = f.listing.covered, f.listing.passed, pending
	namespacesCached.Set(float64(len(f.covered)))
}

func put(m map[string]map[string]string, ns, key, rv string) {
	if m[ns] == nil {
		m[ns] = map[string]string{}
	}
	m[ns][key] = rv
}

// syncedLocked: see Scope.Synced.
func (f *filter) syncedLocked(ns string) bool {
	if !f.covered[ns] {
		return false
	}
	want := f.pending[ns]
	for key, rv := range want {
		obj, exists, err := f.indexer.GetByKey(key)
		if err != nil || exists != (rv != "") {
			return false
		}
		if pod, ok := obj.(*corev1.Pod); exists && (!ok || pod.ResourceVersion != rv) {
			return false
		}
	}
	delete(f.pending, ns)
	return true
}

// WatchWithContext watches through the inner watcher, filtered (see run).
func (f *filter) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	inner, err := f.inner.WatchWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &filteredWatch{out: make(chan watch.Event), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		defer close(w.out)
		defer inner.Stop()
		f.run(ctx, inner, opts.ResourceVersion, w.out)
	}()
	return w, nil
}

// run passes the inner watch's events through the scope, in order. Between
// two events it brings in the namespaces that came to hold something
// since, at the resource version the stream has reached, and lets go of
// those that hold nothing any more.
func (f *filter) run(ctx context.Context, inner watch.Interface, rv string, out chan<- watch.Event) {
	send := func(ev watch.Event) bool {
		select {
		case out <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
	var changed <-chan struct{}
	for refresh := true; ; {
		if refresh {
			f.scope.mu.Lock()
			held, c := f.scope.heldLocked()
			gained := f.releaseLocked(held)
			f.scope.mu.Unlock()
			changed, refresh = c, false
			if len(gained) > 0 && !f.bringIn(ctx, gained, rv, send) {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
			refresh = true
		case ev, ok := <-inner.ResultChan():
			if !ok {
				return
			}
			if m, ok := ev.Object.(metav1.Object); ok && ev.Type != watch.Error {
				rv = m.GetResourceVersion()
			}
			if ev, pass := f.translate(ev); pass && !send(ev) {
				return
			}
		}
	}
}

// releaseLocked stops covering namespaces that hold nothing now, and
// returns those that hold something and are not covered yet. A released
// namespace's cached pods leave the cache at their next event.
func (f *filter) releaseLocked(held map[string]bool) []string {
	var gained []string
	for ns := range f.covered {
		if !held[ns] {
			delete(f.covered, ns)
			delete(f.pending, ns)
		}
	}
	for ns := range held {
		if !f.covered[ns] {
			gained = append(gained, ns)
		}
	}
	namespacesCached.Set(float64(len(f.covered)))
	return gained
}

// translate is what the informer is told of one event, and whether it is
// told anything.
func (f *filter) translate(ev watch.Event) (watch.Event, bool) {
	pod, ok := ev.Object.(*corev1.Pod)
	if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified && ev.Type != watch.Deleted) {
		return ev, true
	}
	key := pod.Namespace + "/" + pod.Name
	f.scope.mu.Lock()
	defer f.scope.mu.Unlock()
	_, was := f.passed[key]
	if ev.Type != watch.Deleted && f.passesLocked(pod, f.covered) {
		f.passed[key] = struct{}{}
		f.expectLocked(pod.Namespace, key, pod.ResourceVersion)
		return ev, true
	}
	if !was {
		return ev, false
	}
	// Deleted, or out of scope now: the informer forgets it.
	delete(f.passed, key)
	f.expectLocked(pod.Namespace, key, "")
	return watch.Event{Type: watch.Deleted, Object: pod}, true
}

func (f *filter) expectLocked(ns, key, rv string) {
	if want := f.pending[ns]; want != nil {
		want[key] = rv
	}
}

// bringIn lists each namespace's pods at exactly rv, the stream's place,
// and sends the ones the informer does not hold as added, then a bookmark
// at rv (the reflector takes each event's version as its own; the
// bookmark puts it back where the stream is). A list that fails (rv too
// old to list at) ends the watch as expired, so the reflector lists all
// again, covering the namespace.
func (f *filter) bringIn(ctx context.Context, namespaces []string, rv string, send func(watch.Event) bool) bool {
	for _, ns := range namespaces {
		pods, err := f.listAt(ctx, ns, rv)
		if err != nil {
			namespaceLoads.WithLabelValues("relisted").Inc()
			send(watch.Event{Type: watch.Error, Object: &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone,
				Reason: metav1.StatusReasonExpired, Message: "bringing in namespace " + ns + ": " + err.Error()}})
			return false
		}
		namespaceLoads.WithLabelValues("loaded").Inc()
		var added []watch.Event
		f.scope.mu.Lock()
		f.covered[ns] = true
		for i := range pods.Items {
			pod := &pods.Items[i]
			key := pod.Namespace + "/" + pod.Name
			if _, was := f.passed[key]; was {
				continue // the informer holds it, at rv or before it and unchanged since
			}
			f.passed[key] = struct{}{}
			put(f.pending, ns, key, pod.ResourceVersion)
			added = append(added, watch.Event{Type: watch.Added, Object: pod})
		}
		namespacesCached.Set(float64(len(f.covered)))
		f.scope.mu.Unlock()
		for _, ev := range added {
			if !send(ev) {
				return false
			}
		}
	}
	return send(watch.Event{Type: watch.Bookmark, Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv}}})
}

// listAt lists one namespace's pods as they were at rv.
func (f *filter) listAt(ctx context.Context, ns, rv string) (*corev1.PodList, error) {
	if rv == "" || rv == "0" {
		return nil, errNoVersion
	}
	obj, err := f.inner.ListWithContext(ctx, metav1.ListOptions{
		FieldSelector:        fields.OneTermEqualSelector("metadata.namespace", ns).String(),
		ResourceVersion:      rv,
		ResourceVersionMatch: metav1.ResourceVersionMatchExact,
	})
	if err != nil {
		return nil, err
	}
	list, ok := obj.(*corev1.PodList)
	if !ok {
		return nil, errNotPods
	}
	return list, nil
}

type filterError string

func (e filterError) Error() string { return string(e) }

const (
	errNoVersion filterError = "the watch has no resource version to list at"
	errNotPods   filterError = "the lister returned no pod list"
)

// filteredWatch is the watch the reflector sees; Stop returns once the
// filter's goroutine has ended, so the next watch starts from its state.
type filteredWatch struct {
	out    chan watch.Event
	cancel context.CancelFunc
	done   chan struct{}
}

func (w *filteredWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *filteredWatch) Stop() {
	w.cancel()
	<-w.done
}

// List and Watch serve callers without a context; the reflector uses the
// context variants.
func (f *filter) List(opts metav1.ListOptions) (runtime.Object, error) {
	return f.ListWithContext(context.Background(), opts)
}

func (f *filter) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return f.WatchWithContext(context.Background(), opts)
}
