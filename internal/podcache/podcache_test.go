package podcache

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// fakeAPI serves the pod informer: lists of the pods it holds (the whole
// cluster, or one namespace at an exact version) and watches the test
// feeds.
type fakeAPI struct {
	mu      sync.Mutex
	pods    map[string]*corev1.Pod
	exact   []metav1.ListOptions // the lists of one namespace, as asked
	failAt  bool                 // a list of one namespace fails as expired
	watches chan *watch.FakeWatcher
	listRV  string
}

func newFakeAPI(pods ...*corev1.Pod) *fakeAPI {
	a := &fakeAPI{pods: map[string]*corev1.Pod{}, watches: make(chan *watch.FakeWatcher, 10), listRV: "10"}
	for _, p := range pods {
		a.pods[p.Namespace+"/"+p.Name] = p
	}
	return a
}

func (a *fakeAPI) lw() *toolscache.ListWatch {
	return &toolscache.ListWatch{
		ListWithContextFunc: func(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			a.mu.Lock()
			defer a.mu.Unlock()
			list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: a.listRV}}
			ns := strings.TrimPrefix(opts.FieldSelector, "metadata.namespace=")
			if opts.FieldSelector != "" {
				a.exact = append(a.exact, opts)
				if a.failAt {
					return nil, apierrors.NewResourceExpired("too old")
				}
				list.ResourceVersion = opts.ResourceVersion
			}
			for _, p := range a.pods {
				if opts.FieldSelector == "" || p.Namespace == ns {
					list.Items = append(list.Items, *p.DeepCopy())
				}
			}
			return list, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			w := watch.NewFake()
			a.watches <- w
			return w, nil
		},
	}
}

func pod(ns, name, rv, ownerKind string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv}}
	if ownerKind != "" {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: ownerKind, Name: "w", UID: "u", Controller: ptr.To(true)}}
	}
	return p
}

// holder is an object that makes its namespace's pods cached.
func holder(ns string) *metav1.PartialObjectMetadata {
	o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "budget"}}
	o.SetGroupVersionKind(schema.GroupVersionKind{Group: "policy.kruise.io", Version: "v1alpha1", Kind: "PodUnavailableBudget"})
	return o
}

type informerUnderTest struct {
	scope    *Scope
	api      *fakeAPI
	informer toolscache.SharedIndexInformer
	watch    *watch.FakeWatcher

	mu             sync.Mutex
	added, deleted []string
}

func start(t *testing.T, api *fakeAPI) *informerUnderTest {
	t.Helper()
	s := New(func(ref *metav1.OwnerReference) bool { return ref != nil && ref.Kind == "CloneSet" })
	u := &informerUnderTest{scope: s, api: api}
	u.informer = s.NewInformer(api.lw(), &corev1.Pod{}, 0, toolscache.Indexers{})
	record := func(to *[]string) func(any) {
		return func(o any) {
			u.mu.Lock()
			defer u.mu.Unlock()
			*to = append(*to, o.(*corev1.Pod).Name)
		}
	}
	if _, err := u.informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: record(&u.added), DeleteFunc: record(&u.deleted)}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go u.informer.RunWithContext(ctx)
	if !toolscache.WaitForCacheSync(ctx.Done(), u.informer.HasSynced) {
		t.Fatal("informer never synced")
	}
	u.watch = <-api.watches
	return u
}

func (u *informerUnderTest) names() map[string]string {
	out := map[string]string{}
	for _, o := range u.informer.GetIndexer().List() {
		p := o.(*corev1.Pod)
		out[p.Namespace+"/"+p.Name] = p.ResourceVersion
	}
	return out
}

// eventually polls cond with a deadline.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestOnlyPodsInScopeAreCached(t *testing.T) {
	u := start(t, newFakeAPI(pod("a", "web-1", "5", "ReplicaSet"), pod("a", "clone-1", "6", "CloneSet"), pod("b", "web-2", "7", "")))
	if got := u.names(); len(got) != 1 || got["a/clone-1"] != "6" {
		t.Fatalf("cached %v, want only the CloneSet's pod", got)
	}
	if u.scope.Synced("a") || u.scope.Holds(context.Background(), "a") {
		t.Fatal("a namespace holding nothing is reported held or synced")
	}
	// A pod out of scope changes and goes: the informer hears nothing.
	u.watch.Modify(pod("b", "web-2", "11", ""))
	u.watch.Delete(pod("b", "web-2", "12", ""))
	// A CloneSet's pod anywhere is cached.
	u.watch.Add(pod("b", "clone-2", "13", "CloneSet"))
	// Handlers hear of events in order: once they have heard of this
	// pod, they have heard of everything before it.
	eventually(t, "handlers hear of the CloneSet's new pod", func() bool {
		u.mu.Lock()
		defer u.mu.Unlock()
		return slices.Contains(u.added, "clone-2")
	})
	if got := u.names(); len(got) != 2 {
		t.Fatalf("cached %v", got)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.deleted) != 0 || len(u.added) != 2 {
		t.Fatalf("handlers heard of adds %v and deletes %v, want only the two CloneSet pods added", u.added, u.deleted)
	}
}

func TestANamespaceComesInAtTheWatchsVersion(t *testing.T) {
	api := newFakeAPI(pod("a", "web-1", "5", "ReplicaSet"), pod("a", "clone-1", "6", "CloneSet"), pod("b", "web-2", "7", ""))
	u := start(t, api)
	u.watch.Modify(pod("b", "web-2", "14", "")) // the stream reaches 14
	u.scope.hold(holder("a"), true)
	eventually(t, "namespace a is synced", func() bool { return u.scope.Synced("a") })
	if got := u.names(); got["a/web-1"] != "5" || got["a/clone-1"] != "6" || len(got) != 2 {
		t.Fatalf("cached %v, want a's two pods", got)
	}
	api.mu.Lock()
	exact := api.exact
	api.mu.Unlock()
	if len(exact) != 1 || exact[0].ResourceVersion != "14" || exact[0].ResourceVersionMatch != metav1.ResourceVersionMatchExact {
		t.Fatalf("namespace listed with %+v, want once, exactly at the stream's 14", exact)
	}
	eventually(t, "the reflector is back at the stream's version", func() bool { return u.informer.LastSyncResourceVersion() == "14" })
	if !u.scope.Holds(context.Background(), "a") || u.scope.Holds(context.Background(), "b") {
		t.Fatal("Holds: want a held, b not")
	}
	// Its pods' events pass from now on; b's still do not.
	u.watch.Modify(pod("a", "web-1", "15", "ReplicaSet"))
	u.watch.Add(pod("b", "web-3", "16", ""))
	u.watch.Add(pod("a", "web-4", "17", ""))
	eventually(t, "a's new pod is cached", func() bool { return u.names()["a/web-4"] == "17" })
	if got := u.names(); got["a/web-1"] != "15" || got["b/web-3"] != "" {
		t.Fatalf("cached %v", got)
	}

	// Released, a's pods leave at their next event; the CloneSet's stays.
	u.scope.hold(holder("a"), false)
	eventually(t, "a is no longer covered", func() bool { return !u.scope.Synced("a") })
	u.watch.Modify(pod("a", "web-1", "18", "ReplicaSet"))
	u.watch.Modify(pod("a", "clone-1", "19", "CloneSet"))
	eventually(t, "the CloneSet's pod moves on", func() bool { return u.names()["a/clone-1"] == "19" })
	if _, cached := u.names()["a/web-1"]; cached {
		t.Fatal("a pod out of scope stayed cached after its event")
	}
}

func TestANamespaceIsNotSyncedUntilTheInformerHoldsIt(t *testing.T) {
	api := newFakeAPI(pod("a", "web-1", "5", "ReplicaSet"))
	s := New(func(*metav1.OwnerReference) bool { return false })
	informer := s.NewInformer(api.lw(), &corev1.Pod{}, 0, toolscache.Indexers{})
	f := s.pods
	// What the filter sent, before the informer took it in.
	s.mu.Lock()
	f.covered["a"] = true
	put(f.pending, "a", "a/web-1", "5")
	s.mu.Unlock()
	if s.Synced("a") {
		t.Fatal("synced before the informer holds the namespace's pods")
	}
	if err := informer.GetIndexer().Add(pod("a", "web-1", "5", "ReplicaSet")); err != nil {
		t.Fatal(err)
	}
	if !s.Synced("a") {
		t.Fatal("not synced once the informer holds them")
	}
}

func TestAFailedNamespaceListRelistsAll(t *testing.T) {
	api := newFakeAPI(pod("a", "web-1", "5", "ReplicaSet"))
	u := start(t, api)
	api.mu.Lock()
	api.failAt, api.listRV = true, "20"
	api.mu.Unlock()
	u.scope.hold(holder("a"), true)
	// The watch ends as expired; the reflector lists everything again,
	// which covers a.
	eventually(t, "namespace a is synced after the relist", func() bool { return u.scope.Synced("a") })
	if got := u.names(); got["a/web-1"] != "5" {
		t.Fatalf("cached %v", got)
	}
}

func TestHoldsWaitsForTheTrackedInformers(t *testing.T) {
	s := New(func(*metav1.OwnerReference) bool { return false })
	s.regs = append(s.regs, neverSynced{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if !s.Holds(ctx, "a") {
		t.Fatal("before the tracked kinds are known, every namespace must count as held")
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatal("Holds did not wait")
	}
	// A kind expected but not registered yet (its informer waits for its
	// CRD's version) holds the answer back the same way.
	s = New(func(*metav1.OwnerReference) bool { return false })
	s.expected = 1
	ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if !s.Holds(ctx2, "a") || ctx2.Err() == nil {
		t.Fatal("a kind not registered yet must keep every namespace held, after a wait")
	}
	var nilScope *Scope
	if !nilScope.Holds(context.Background(), "a") || !nilScope.Synced("a") || Waiting(nilScope, "a") {
		t.Fatal("a nil scope caches everything")
	}
}

type neverSynced struct {
	toolscache.ResourceEventHandlerRegistration
}

func (neverSynced) HasSynced() bool { return false }
