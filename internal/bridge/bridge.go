package bridge

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	"github.com/lifeline-k8s/lifeline/pkg/hook"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// Bridge keeps a Registry in step with the pods of the workloads it
// follows.
type Bridge struct {
	Config   *Config
	Registry Registry
	// Client reads from the manager's cache; APIReader around it, to make
	// sure a pod is really gone before its entry is removed.
	Client    client.Client
	APIReader client.Reader
	Log       logr.Logger
	// Changed, if set, asks for a reconcile now (the registry lost its
	// entries, say).
	Changed <-chan struct{}

	locks keyedMutex
	poke  chan struct{}
	once  sync.Once
}

// Handlers are the bridge's hook handlers: register a pod before it
// counts as available and after its update, unregister it before its
// update and before its deletion.
func (b *Bridge) Handlers() hook.Handlers {
	return hook.Handlers{
		BeforeNormal: b.register, Registered: b.register, AfterUpdate: b.register,
		BeforeUpdate: b.unregister, BeforeDelete: b.unregister,
	}
}

func (b *Bridge) register(ctx context.Context, e hook.Event) error {
	inst, err := instanceOf(e.Pod, e.Workload.Name(), b.Config.Port, b.Config.PortName)
	if err != nil {
		return err
	}
	defer b.locks.lock(inst.ID())()
	b.Log.V(1).Info("registering", "id", inst.ID(), "moment", e.Moment, "revision", inst.Revision, "uid", inst.UID)
	return observe("register", b.Registry.Register(ctx, inst))
}

func (b *Bridge) unregister(ctx context.Context, e hook.Event) error {
	id := Instance{Namespace: e.Pod.Namespace, Workload: e.Workload.Name(), Pod: e.Pod.Name}.ID()
	defer b.locks.lock(id)()
	b.Log.V(1).Info("unregistering", "id", id, "moment", e.Moment, "revision", e.Revision, "uid", e.Pod.UID)
	return observe("unregister", b.Registry.Unregister(ctx, id))
}

// Poke asks for a reconcile soon, e.g. when a pod was deleted.
func (b *Bridge) Poke() {
	b.init()
	select {
	case b.poke <- struct{}{}:
	default:
	}
}

func (b *Bridge) init() { b.once.Do(func() { b.poke = make(chan struct{}, 1) }) }

// NeedLeaderElection: only the leader's reconcile writes, as only its
// handlers run.
func (b *Bridge) NeedLeaderElection() bool { return true }

// Start reconciles the registry with the pods at once, then every Resync,
// when poked and when the registry changed, until ctx ends.
func (b *Bridge) Start(ctx context.Context) error {
	b.init()
	ticker := time.NewTicker(b.Config.Resync.Duration)
	defer ticker.Stop()
	for {
		if err := b.Reconcile(ctx); err != nil && ctx.Err() == nil {
			b.Log.Error(err, "reconciling the registry with the pods; retrying at the next resync")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		case <-b.poke:
		case <-b.Changed:
			b.Log.Info("the registry lost the bridge's entries; registering the pods in service again")
		}
	}
}

// Reconcile removes the bridge's entries whose pods are really gone and
// registers again the pods in service that have no entry (they expired
// while the bridge was down). Entries of pods still there are left as they
// are, whatever their state: their hooks take them out, not the reconcile.
func (b *Bridge) Reconcile(ctx context.Context) error {
	entries, err := b.Registry.Entries(ctx)
	if err != nil {
		return observe("list", err)
	}
	pods, err := b.pods(ctx)
	if err != nil {
		return err
	}
	remove, restore := planReconcile(entries, pods, b.Config.Name, time.Now())
	var errs []error
	for _, e := range remove {
		errs = append(errs, b.removeIfGone(ctx, e))
	}
	for _, p := range restore {
		errs = append(errs, b.restore(ctx, p))
	}
	entriesGauge.WithLabelValues(b.Config.Name).Set(float64(len(entries) - len(remove) + len(restore)))
	return errors.Join(errs...)
}

// removeIfGone removes an entry once a live read confirms its pod is gone
// (or replaced by another of the same name), and only if the entry was not
// written again meanwhile.
func (b *Bridge) removeIfGone(ctx context.Context, e Entry) error {
	defer b.locks.lock(e.ID)()
	ns, _, name, ok := splitID(e.ID)
	if !ok {
		return nil
	}
	pod := &corev1.Pod{}
	err := b.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod)
	switch {
	case err == nil && (e.UID == "" || string(pod.UID) == e.UID):
		return nil // still there: its hooks decide
	case err != nil && !apierrors.IsNotFound(err):
		return err
	}
	if err := b.Registry.RemoveIfUnchanged(ctx, e); err != nil {
		return observe("remove", err)
	}
	reconciled.WithLabelValues(b.Config.Name, "removed").Inc()
	b.Log.Info("removed the entry of a pod that is gone", "id", e.ID)
	return observe("remove", nil)
}

// restore registers a pod in service that has no entry, once the cache,
// read again under the pod's lock, still says so: a handler taking the pod
// out meanwhile holds that lock, and the cache never goes back.
func (b *Bridge) restore(ctx context.Context, p podView) error {
	defer b.locks.lock(p.inst.ID())()
	pod := &corev1.Pod{}
	if err := b.Client.Get(ctx, client.ObjectKey{Namespace: p.inst.Namespace, Name: p.inst.Pod}, pod); err != nil {
		return client.IgnoreNotFound(err)
	}
	if string(pod.UID) != p.inst.UID || !eligible(pod, b.Config.Name, time.Now()) {
		return nil
	}
	inst, err := instanceOf(pod, p.inst.Workload, b.Config.Port, b.Config.PortName)
	if err != nil {
		return nil
	}
	if inst.IP != p.inst.IP || inst.Port != p.inst.Port {
		return nil // the pod moved on since it was listed; the next reconcile sees it
	}
	register := b.Registry.RegisterIfAbsent
	if p.stale {
		register = b.Registry.Register
	}
	if err := register(ctx, inst); err != nil {
		return observe("restore", err)
	}
	reconciled.WithLabelValues(b.Config.Name, "restored").Inc()
	b.Log.Info("registered again a pod in service whose entry was gone or held another address", "id", p.inst.ID(), "ip", inst.IP)
	return observe("restore", nil)
}

// podView is a pod as the reconcile sees it.
type podView struct {
	pod  *corev1.Pod
	inst Instance
	// instErr says why the pod has no instance (no IP, no port).
	instErr error
	// stale says its entry holds another address: restore replaces it.
	stale bool
}

// pods lists the pods of the followed workloads.
func (b *Bridge) pods(ctx context.Context) ([]podView, error) {
	workloads, err := hook.ListWorkloads(ctx, b.Client, b.Config.Follow(), b.Config.Namespace)
	if err != nil {
		return nil, err
	}
	var out []podView
	for _, w := range workloads {
		pods, err := hook.PodsOf(ctx, b.Client, w)
		if err != nil {
			return nil, err
		}
		for _, pod := range pods {
			inst, err := instanceOf(pod, w.Name(), b.Config.Port, b.Config.PortName)
			if err != nil {
				inst = Instance{Namespace: pod.Namespace, Workload: w.Name(), Pod: pod.Name, UID: string(pod.UID)}
			}
			out = append(out, podView{pod: pod, inst: inst, instErr: err})
		}
	}
	return out, nil
}

// planReconcile decides, from the bridge's entries and the pods, which
// entries to remove (no pod of that name and UID) and which pods to
// register again (eligible, with no entry or one at another address). It
// never removes the entry of a pod that exists, whatever its state, and
// leaves an entry at the pod's address as it is.
func planReconcile(entries []Entry, pods []podView, operator string, now time.Time) (remove []Entry, restore []podView) {
	byID := map[string]podView{}
	for _, p := range pods {
		byID[p.inst.ID()] = p
	}
	has := map[string]Entry{}
	for _, e := range entries {
		has[e.ID] = e
		p, ok := byID[e.ID]
		if !ok || (e.UID != "" && e.UID != p.inst.UID) {
			remove = append(remove, e)
		}
	}
	for _, p := range pods {
		if p.instErr != nil || !eligible(p.pod, operator, now) {
			continue
		}
		e, ok := has[p.inst.ID()]
		if !ok {
			restore = append(restore, p)
		} else if e.IP != "" && e.UID == p.inst.UID && (e.IP != p.inst.IP || e.Port != p.inst.Port) {
			p.stale = true
			restore = append(restore, p)
		}
	}
	return remove, restore
}

// eligible says whether a pod without an entry should have one: Normal,
// Ready, not being deleted, and registered by the bridge's last moment.
func eligible(pod *corev1.Pod, operator string, now time.Time) bool {
	s := podfacts.State(pod)
	if pod.DeletionTimestamp != nil || (s != "" && s != pub.LifecycleStateNormal) || !podfacts.IsReady(pod, 0, now) {
		return false
	}
	m, _, ok := hook.LastMoment(pod, operator)
	return ok && m.InService()
}

// splitID splits <namespace>/<cloneset>/<pod>.
func splitID(id string) (namespace, cloneSet, pod string, ok bool) {
	parts := strings.Split(id, "/")
	if len(parts) != 3 || parts[0] == "" || parts[2] == "" {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}

// keyedMutex serialises work on one registry id: a handler and the
// reconcile never write one entry at once.
type keyedMutex struct {
	mu    sync.Mutex
	locks map[string]*keyedLock
}

type keyedLock struct {
	sync.Mutex
	users int
}

func (k *keyedMutex) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyedLock{}
	}
	l := k.locks[key]
	if l == nil {
		l = &keyedLock{}
		k.locks[key] = l
	}
	l.users++
	k.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		if l.users--; l.users == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}
