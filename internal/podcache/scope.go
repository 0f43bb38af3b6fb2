// Package podcache keeps the manager's pod cache to the pods Lifeline
// looks at. A cluster may run tens of thousands of pods no Lifeline
// feature ever judges (a Deployment's, in a namespace with no budget, no
// Lifeline workload and no PersistentPodState); cached, each costs the
// manager about 4 KiB of heap for nothing (measured: 20,000 such pods took
// it from 64 to 236 MiB). So the pod informer's list and watch pass only
//
//   - pods whose controller is a registered workload kind (pkg/workload),
//     in any namespace, and
//   - every pod of a namespace that holds an object of a kind that asks
//     Lifeline to look at its pods (Scope.Track: every workload kind, the
//     budget, the PersistentPodState: orphans to adopt, pods a budget
//     selects, pods to place).
//
// When a namespace comes to hold such an object, its pods are listed at
// exactly the resource version the watch has reached and added to the
// stream there, so the cache never holds a version older than one it
// showed, and no relist (and no reflector backoff) is needed. Until the
// informer has taken them in, Synced says so: a budget's status or a
// placement record computed from half a namespace would be wrong, so
// those controllers wait for it.
package podcache

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/lifeline-k8s/lifeline/pkg/workload"
)

var (
	namespacesCached = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "lifeline_pod_cache_namespaces",
		Help: "Namespaces whose every pod the manager caches (they hold a Lifeline workload, a PodUnavailableBudget or a PersistentPodState); elsewhere it caches only the pods Lifeline's workloads control.",
	})
	namespaceLoads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lifeline_pod_cache_namespace_loads_total",
		Help: "Lists of one namespace's pods, made when the namespace came to hold an object that asks Lifeline to look at its pods, by result (loaded; relisted: the list failed and the whole cache was listed again).",
	}, []string{"result"})
)

func init() { metrics.Registry.MustRegister(namespacesCached, namespaceLoads) }

// Scope decides which pods the manager caches. Its methods are safe on a
// nil Scope, which caches every pod (integration tests run features with
// a plain cache).
type Scope struct {
	// owns reports whether a controller reference names a kind whose pods
	// are cached wherever they run.
	owns func(*metav1.OwnerReference) bool

	mu sync.Mutex
	// holders are the tracked objects of each namespace, by type and name.
	holders map[string]map[string]struct{}
	// changed is closed, and replaced, whenever a namespace comes to hold
	// its first object or loses its last.
	changed chan struct{}
	regs    []toolscache.ResourceEventHandlerRegistration
	// expected is how many kinds trackers will register.
	expected int
	ready    bool
	pods     *filter
}

// New returns a Scope that caches the pods owns accepts the controller of
// everywhere, and every pod of the namespaces Track makes it hold.
func New(owns func(*metav1.OwnerReference) bool) *Scope {
	return &Scope{owns: owns, holders: map[string]map[string]struct{}{}, changed: make(chan struct{})}
}

// NewInformer is cache.Options.NewInformer: the pod informer lists and
// watches through the scope's filter; every other informer is the default.
func (s *Scope) NewInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	if _, ok := obj.(*corev1.Pod); !ok {
		return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
	}
	f := newFilter(s, toolscache.ToListerWatcherWithContext(lw))
	informer := toolscache.NewSharedIndexInformer(f, obj, resync, indexers)
	s.mu.Lock()
	f.indexer, s.pods = informer.GetIndexer(), f
	s.mu.Unlock()
	return informer
}

// Tracker makes every object of objs' types hold its namespace's pods in
// the cache while it exists. Add it to the manager: it registers its
// handlers once the cache runs, each kind on its own, so that a kind not
// served yet (a CRD whose version the manager's conversion set-up adds)
// neither holds the cache's start back nor the other kinds; until every
// kind has shown its objects once, Holds says true everywhere.
func (s *Scope) Tracker(c ctrlcache.Cache, objs ...client.Object) *Tracker {
	s.mu.Lock()
	s.expected += len(objs)
	s.mu.Unlock()
	return &Tracker{scope: s, cache: c, objs: objs}
}

// Tracker is a manager runnable; see Scope.Tracker.
type Tracker struct {
	scope *Scope
	cache ctrlcache.Cache
	objs  []client.Object
}

// NeedLeaderElection: every replica's webhooks ask the scope.
func (t *Tracker) NeedLeaderElection() bool { return false }

// Start registers the handlers and returns; the informers run with the
// cache. A kind the API server does not serve yet is tried again every
// second (its absence keeps Holds true, so nothing goes unjudged).
func (t *Tracker) Start(ctx context.Context) error {
	for _, obj := range t.objs {
		go func() {
			_ = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
				err := t.track(ctx, obj)
				if err != nil {
					log.FromContext(ctx).Info("pod cache scope: cannot watch a kind yet", "kind", fmt.Sprintf("%T", obj), "error", err.Error())
				}
				return err == nil, nil
			})
		}()
	}
	return nil
}

func (t *Tracker) track(ctx context.Context, obj client.Object) error {
	informer, err := t.cache.GetInformer(ctx, obj, ctrlcache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	reg, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { t.scope.hold(o, true) },
		DeleteFunc: func(o any) { t.scope.hold(o, false) },
	})
	if err != nil {
		return err
	}
	t.scope.mu.Lock()
	t.scope.regs = append(t.scope.regs, reg)
	t.scope.mu.Unlock()
	return nil
}

func (s *Scope) hold(o any, on bool) {
	if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	obj, ok := o.(client.Object)
	if !ok {
		return
	}
	ns, key := obj.GetNamespace(), typeName(obj)+"/"+obj.GetName()
	s.mu.Lock()
	defer s.mu.Unlock()
	held := s.holders[ns]
	before := len(held)
	switch {
	case on && held == nil:
		held = map[string]struct{}{}
		s.holders[ns] = held
		fallthrough
	case on:
		held[key] = struct{}{}
	default:
		delete(held, key)
		if len(held) == 0 {
			delete(s.holders, ns)
		}
	}
	if (before == 0) != (len(held) == 0) {
		close(s.changed)
		s.changed = make(chan struct{})
	}
}

// ReadyWait bounds how long Holds waits, at start-up only, for the
// tracked kinds' informers.
const ReadyWait = time.Second

// Holds reports whether anything in namespace asks Lifeline to look at its
// pods; where nothing does, no pod there is judged, placed or counted by
// any feature. Until the tracked kinds' informers have shown every object
// once it waits (within ctx and ReadyWait), so that a namespace is never
// reported empty because its budget is not yet known; past that it says
// true. Once ready, it is one map lookup (every pod webhook request asks).
func (s *Scope) Holds(ctx context.Context, namespace string) bool {
	if s == nil {
		return true
	}
	s.mu.Lock()
	ready, held := s.ready, len(s.holders[namespace]) > 0
	s.mu.Unlock()
	if ready {
		return held
	}
	ctx, cancel := context.WithTimeout(ctx, ReadyWait)
	defer cancel()
	if !s.waitReady(ctx) {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.holders[namespace]) > 0
}

func (s *Scope) waitReady(ctx context.Context) bool {
	for {
		s.mu.Lock()
		ready, regs, expected := s.ready, s.regs, s.expected
		s.mu.Unlock()
		if ready {
			return true
		}
		synced := len(regs) == expected
		for _, r := range regs {
			synced = synced && r.HasSynced()
		}
		if synced {
			s.mu.Lock()
			s.ready = true
			s.mu.Unlock()
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Synced reports whether the cache holds every pod of namespace: true when
// the namespace's pods are cached and the informer has taken in those it
// was given when the namespace came in (or at its last full list).
func (s *Scope) Synced(namespace string) bool {
	if s == nil {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pods == nil || s.pods.syncedLocked(namespace)
}

// heldLocked are the namespaces that hold something, and the channel
// closed at their next change.
func (s *Scope) heldLocked() (map[string]bool, <-chan struct{}) {
	out := make(map[string]bool, len(s.holders))
	for ns := range s.holders {
		out[ns] = true
	}
	return out, s.changed
}

// typeName tells tracked types apart without their kind, which a typed
// object from the cache does not carry.
func typeName(obj client.Object) string {
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	return fmt.Sprintf("%T", obj)
}

// Syncer says whether the cache holds every pod of a namespace (Scope).
type Syncer interface {
	Synced(namespace string) bool
}

// Recheck is how soon a controller that found its namespace not yet
// synced looks again; bringing a namespace in takes one list.
const Recheck = 100 * time.Millisecond

// Waiting reports whether s (nil: every pod is cached) has not yet taken
// in every pod of namespace, so that a count of its pods would be short.
func Waiting(s Syncer, namespace string) bool { return s != nil && !s.Synced(namespace) }

// ForWorkloads is the manager's scope: pods whose controller is a kind
// registered in pkg/workload are cached wherever they run.
func ForWorkloads() *Scope {
	return New(func(ref *metav1.OwnerReference) bool { _, ok := workload.ForOwner(ref); return ok })
}
