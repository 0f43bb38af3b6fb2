// Package controller runs CloneSets: it reads a snapshot of a CloneSet and its
// pods, asks the planner what to do, and executes the plan with
// expectations, so a stale cache or a restart never acts twice.
package controller

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/cloneset/planner"
	"github.com/lifeline-k8s/lifeline/internal/disruption"
	pubadmission "github.com/lifeline-k8s/lifeline/internal/pub/admission"
	"github.com/lifeline-k8s/lifeline/internal/requeue"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
	"github.com/lifeline-k8s/lifeline/pkg/podpatch"
)

// ownerIndex indexes pods, PVCs and revisions by the UID of their
// controller, so a CloneSet lists what it owns, never adopting orphans.
const ownerIndex = "lifeline.ownerUID"

// Options tune the controller.
type Options struct {
	// Workers is how many CloneSets reconcile at once.
	Workers int
	// ExpectationTimeout bounds how long a write the cache never shows
	// holds a CloneSet back.
	ExpectationTimeout time.Duration
	// ExcludePreparingDelete leaves PreparingDelete pods out of every
	// CloneSet's replica count.
	ExcludePreparingDelete bool
	// HookWaitWarning is how long a pod may wait on a lifecycle hook
	// before a Warning event on its CloneSet says so; 0 turns it off.
	HookWaitWarning time.Duration
	// CreatePodsNormal creates pods without a preNormal hook in Normal, as
	// OpenKruise up to v1.8, instead of PreparingNormal until scheduled.
	CreatePodsNormal bool
	// RecreateOnClaimTemplateChange recreates pods of InPlaceIfPossible
	// CloneSets whose volumeClaimTemplates changed since their revision,
	// so they get claims of the new templates (OpenKruise's
	// RecreatePodWhenChangeVCTInCloneSetGate).
	RecreateOnClaimTemplateChange bool
}

// Reconciler reconciles CloneSets.
type Reconciler struct {
	client.Client
	// APIReader reads around the cache, for the rare checks that must see
	// the latest state.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Clock     clock.Clock
	Options   Options
	// Budgets are the PodUnavailableBudgets a plan consults before it
	// deletes a pod or updates it in place, and that an in-place update
	// takes its budget from; nil: no budgets.
	Budgets *pubadmission.Guard

	expectations *expectations
	// parsed caches, per CloneSet, the pod template of each live revision
	// by UID: revision data never changes, and parsing it on every
	// reconcile is wasted work.
	parsed sync.Map // types.NamespacedName → map[types.UID]*corev1.PodTemplateSpec
}

// +kubebuilder:rbac:groups=apps.kruise.io,resources=clonesets,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=clonesets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=clonesets/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=controllerrevisions,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy.kruise.io,resources=podunavailablebudgets,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy.kruise.io,resources=podunavailablebudgets/status,verbs=get;update

// SetupWithManager registers the controller and the owner index.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.Options.ExpectationTimeout == 0 {
		r.Options.ExpectationTimeout = 5 * time.Minute
	}
	if r.Options.Workers == 0 {
		r.Options.Workers = 3
	}
	r.expectations = newExpectations(r.Options.ExpectationTimeout)
	for _, obj := range []client.Object{&corev1.Pod{}, &corev1.PersistentVolumeClaim{}, &appsv1.ControllerRevision{}} {
		if err := mgr.GetFieldIndexer().IndexField(ctx, obj, ownerIndex, func(o client.Object) []string {
			if ref := metav1.GetControllerOf(o); ref != nil && ref.Kind == "CloneSet" {
				return []string{string(ref.UID)}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	owned := handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &appsv1alpha1.CloneSet{}, handler.OnlyControllerOwner())
	return ctrl.NewControllerManagedBy(mgr).
		For(&appsv1alpha1.CloneSet{}).
		Watches(&corev1.Pod{}, owned).
		Watches(&corev1.PersistentVolumeClaim{}, owned).
		Watches(&appsv1.ControllerRevision{}, owned).
		// A budget that frees up lets held pods go at once, not at the
		// next retry.
		Watches(&policyv1alpha1.PodUnavailableBudget{}, handler.EnqueueRequestsFromMapFunc(r.cloneSetsOf)).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Options.Workers, RateLimiter: requeue.RateLimiter()}).
		Complete(r)
}

// Reconcile moves one CloneSet one step towards its spec, in four phases:
// read a snapshot (only once the cache shows our own writes), plan and
// execute one step, write the status, and tidy up (podsToDelete, revision
// history, hook-wait warnings).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	c, wait, err := r.readSnapshot(ctx, req)
	if c == nil || err != nil {
		return wait, err
	}
	status := c.cs.Status.DeepCopy()
	var result ctrl.Result
	var syncErr error
	if c.cs.DeletionTimestamp == nil {
		result, syncErr = r.sync(ctx, c.cs, c.snap, c.revs, status)
	}
	newStatus, deadline := planner.Status(c.snap, *status, c.revs.collisionCount, c.selector.String())
	if err := r.writeStatus(ctx, c.cs, newStatus); err != nil {
		return ctrl.Result{}, errors.Join(syncErr, err)
	}
	recordGauges(c.cs, &newStatus)
	next, err := r.tidy(ctx, c)
	if err != nil {
		return ctrl.Result{}, errors.Join(syncErr, err)
	}
	for _, after := range []time.Duration{deadline, next} {
		if after > 0 && (result.RequeueAfter == 0 || after < result.RequeueAfter) {
			result.RequeueAfter = after
		}
	}
	return result, syncErr
}

// cycle is what one reconcile read: the CloneSet, every pod it owns, and
// the planner's snapshot.
type cycle struct {
	cs       *appsv1alpha1.CloneSet
	all      []*corev1.Pod
	snap     planner.Snapshot
	revs     *revisions
	selector labels.Selector
}

// readSnapshot reads what the planner needs. It returns no cycle, with
// when to look again, while the cache does not show this controller's own
// writes yet, and none for a CloneSet that is gone.
func (r *Reconciler) readSnapshot(ctx context.Context, req ctrl.Request) (*cycle, ctrl.Result, error) {
	cs := &appsv1alpha1.CloneSet{}
	if err := r.Get(ctx, req.NamespacedName, cs); err != nil {
		if apierrors.IsNotFound(err) {
			r.expectations.Forget(req.NamespacedName)
			r.parsed.Delete(req.NamespacedName)
			deleteGauges(req.Namespace, req.Name)
		}
		return nil, ctrl.Result{}, client.IgnoreNotFound(err)
	}
	now := r.Clock.Now()

	owned := &corev1.PodList{}
	if err := r.List(ctx, owned, client.InNamespace(cs.Namespace), client.MatchingFields{ownerIndex: string(cs.UID)}); err != nil {
		return nil, ctrl.Result{}, err
	}
	all := make([]*corev1.Pod, 0, len(owned.Items))
	for i := range owned.Items {
		all = append(all, &owned.Items[i])
	}
	if wait, err := r.waitForCache(ctx, cs, all, now); wait > 0 || err != nil {
		return nil, ctrl.Result{RequeueAfter: wait}, err
	}

	selector, err := metav1.LabelSelectorAsSelector(cs.Spec.Selector)
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	active, err := r.activePods(ctx, cs, all, selector)
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	pvcs, err := r.ownedPVCs(ctx, cs)
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	if pvcs, err = r.releaseUnreusedPVCs(ctx, cs, pvcs, all); err != nil {
		return nil, ctrl.Result{}, err
	}
	revs, err := r.syncRevisions(ctx, cs)
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	nodeLabels, err := r.nodeLabels(ctx, cs, active)
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	var templates map[string]*corev1.PodTemplateSpec
	if planner.UpdatesInPlace(cs) {
		templates = r.templates(req.NamespacedName, revs)
	}
	disruptions, err := r.disruptions(ctx, cs, now)
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	snap := planner.Snapshot{
		CloneSet: cs, Pods: active, PVCs: pvcs, NodeLabels: nodeLabels, Templates: templates,
		UpdateRevision: revs.update.Name, CurrentRevision: revs.current.Name,
		ExcludePreparingDelete:        r.Options.ExcludePreparingDelete || cs.Labels[appsv1alpha1.CloneSetScalingExcludePreparingDeleteKey] == "true",
		CreateNormal:                  r.Options.CreatePodsNormal,
		ClaimTemplateHashes:           revs.claimTemplateHashes(),
		RecreateOnClaimTemplateChange: r.Options.RecreateOnClaimTemplateChange,
		Disruptions:                   disruptions,
		NewInstanceID:                 randomID, Now: now,
	}
	return &cycle{cs: cs, all: all, snap: snap, revs: revs, selector: selector}, ctrl.Result{}, nil
}

// cloneSetsOf maps a budget to the CloneSets of its namespace.
func (r *Reconciler) cloneSetsOf(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &appsv1alpha1.CloneSetList{}
	if err := r.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, cs := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&cs)})
	}
	return out
}

// disruptions is the plan's disruption check: the budgets of the
// CloneSet's namespace as read now; nil without budgets.
func (r *Reconciler) disruptions(ctx context.Context, cs *appsv1alpha1.CloneSet, now time.Time) (disruption.Check, error) {
	if r.Budgets == nil {
		return nil, nil
	}
	list := &policyv1alpha1.PodUnavailableBudgetList{}
	if err := r.List(ctx, list, client.InNamespace(cs.Namespace)); err != nil {
		return nil, err
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	owner := metav1.OwnerReference{APIVersion: appsv1alpha1.GroupVersion.String(), Kind: "CloneSet", Name: cs.Name, UID: cs.UID}
	return pubadmission.NewCheck(list.Items, owner, now), nil
}

// waitForCache says how long to wait before planning while the cache does
// not show this controller's own writes to the CloneSet's pods yet: 0 once
// it does. A write it never shows stops counting after ExpectationTimeout.
func (r *Reconciler) waitForCache(ctx context.Context, cs *appsv1alpha1.CloneSet, all []*corev1.Pod, now time.Time) (time.Duration, error) {
	lookup := func(name string) (types.UID, bool, error) {
		pod := &corev1.Pod{}
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: cs.Namespace, Name: name}, pod)
		if apierrors.IsNotFound(err) {
			return "", false, nil
		}
		return pod.UID, err == nil, err
	}
	ok, waiting, expired, err := r.expectations.Satisfied(client.ObjectKeyFromObject(cs), all, lookup, now)
	if err != nil {
		return 0, err
	}
	if expired > 0 {
		expectationsExpired.WithLabelValues(cs.Namespace, cs.Name).Add(float64(expired))
		log.FromContext(ctx).Info("dropped expectations the cache never met", "count", expired)
	}
	if !ok {
		// The watch event that meets the expectation requeues us; the
		// delay only bounds a missed one.
		log.FromContext(ctx).V(1).Info("waiting for the cache", "for", waiting)
		return 5 * time.Second, nil
	}
	return 0, nil
}

// tidy drops names of gone pods from podsToDelete, truncates the revision
// history, and warns about pods waiting on a hook too long; it returns when
// the next pod will cross that limit.
func (r *Reconciler) tidy(ctx context.Context, c *cycle) (time.Duration, error) {
	if err := r.prunePodsToDelete(ctx, c.cs, c.all); err != nil {
		return 0, err
	}
	if err := r.truncateHistory(ctx, c.cs, c.revs, c.snap.Pods); err != nil {
		return 0, err
	}
	stuck, next := planner.WaitingOnHooks(c.snap.Pods, r.Options.HookWaitWarning, c.snap.Now)
	if len(stuck) > 0 {
		r.Recorder.Eventf(c.cs, nil, corev1.EventTypeWarning, "LifecycleHookWaiting", "Wait", "%s", planner.StuckMessage(stuck, r.Options.HookWaitWarning))
	}
	if next > 0 {
		next += time.Second
	}
	return next, nil
}

// sync plans and executes one step, and records failures in conditions.
func (r *Reconciler) sync(ctx context.Context, cs *appsv1alpha1.CloneSet, snap planner.Snapshot, revs *revisions, status *appsv1alpha1.CloneSetStatus) (ctrl.Result, error) {
	plan, err := planner.Compute(snap)
	if err != nil {
		r.Recorder.Eventf(cs, nil, corev1.EventTypeWarning, "FailedPlan", "Plan", "%v", err)
		planner.SetFailure(status, appsv1alpha1.CloneSetConditionFailedUpdate, err, snap.Now)
		return ctrl.Result{}, err
	}
	if len(plan.Held) > 0 {
		r.Recorder.Eventf(cs, nil, corev1.EventTypeWarning, "DisruptionNotAllowed", "Disrupt", "%s", heldMessage(plan.Held))
	}
	if plan.ScaleUpLimited {
		r.Recorder.Eventf(cs, nil, corev1.EventTypeWarning, "ScaleUpLimited", "Scale",
			"scaleUp is limited because of scaleStrategy.maxUnavailable, limit: %d", plan.Diffs.ScaleUpLimit)
	}
	var failures []error
	stale := false
	for _, err := range r.execute(ctx, cs, revs, plan.Actions) {
		var se *staleError
		if errors.As(err, &se) {
			stale = true
			log.FromContext(ctx).V(1).Info("pod changed since it was planned; planning again", "pod", se.pod, "reason", se.err.Error())
			continue
		}
		failures = append(failures, err)
	}
	conditionType := appsv1alpha1.CloneSetConditionFailedUpdate
	if plan.Phase == planner.PhaseScale {
		conditionType = appsv1alpha1.CloneSetConditionFailedScale
	}
	if err := errors.Join(failures...); err != nil {
		planner.SetFailure(status, conditionType, err, snap.Now)
		return ctrl.Result{}, err
	}
	if len(plan.Actions) > 0 {
		planner.ClearFailure(status, conditionType)
	}
	if stale {
		// The pod's own change brings the CloneSet back; this is the
		// safety net should that event be coalesced away.
		return ctrl.Result{RequeueAfter: staleRetry}, nil
	}
	return ctrl.Result{RequeueAfter: plan.RequeueAfter}, nil
}

// templates returns the pod templates of a CloneSet's revisions by name.
// Only live revisions stay cached, so deleted ones do not pile up.
func (r *Reconciler) templates(key types.NamespacedName, revs *revisions) map[string]*corev1.PodTemplateSpec {
	var known map[types.UID]*corev1.PodTemplateSpec
	if v, ok := r.parsed.Load(key); ok {
		known = v.(map[types.UID]*corev1.PodTemplateSpec)
	}
	live := map[types.UID]*corev1.PodTemplateSpec{}
	out := map[string]*corev1.PodTemplateSpec{}
	for _, cr := range append(revs.all, revs.update) {
		t, ok := known[cr.UID]
		if !ok {
			var err error
			if t, err = templateOf(cr); err != nil {
				continue
			}
		}
		live[cr.UID], out[cr.Name] = t, t
	}
	r.parsed.Store(key, live)
	return out
}

// nodeLabels reads the labels of the pods' nodes, which scale-in needs only
// when the template spreads pods over topology keys.
func (r *Reconciler) nodeLabels(ctx context.Context, cs *appsv1alpha1.CloneSet, pods []*corev1.Pod) (map[string]map[string]string, error) {
	if len(cs.Spec.Template.Spec.TopologySpreadConstraints) == 0 {
		return nil, nil
	}
	labels := map[string]map[string]string{}
	for _, pod := range pods {
		name := pod.Spec.NodeName
		if _, done := labels[name]; done || name == "" {
			continue
		}
		node := &corev1.Node{}
		if err := r.Get(ctx, client.ObjectKey{Name: name}, node); client.IgnoreNotFound(err) != nil {
			return nil, err
		}
		labels[name] = node.Labels
	}
	return labels, nil
}

// activePods returns the owned pods that count: not terminating, not
// finished. Owned pods that no longer match the selector are released,
// as a ReplicaSet releases them.
func (r *Reconciler) activePods(ctx context.Context, cs *appsv1alpha1.CloneSet, all []*corev1.Pod, selector labels.Selector) ([]*corev1.Pod, error) {
	var active []*corev1.Pod
	for _, pod := range all {
		if !selector.Matches(labels.Set(pod.Labels)) {
			if err := r.release(ctx, cs, pod); err != nil {
				return nil, err
			}
			continue
		}
		if pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
			active = append(active, pod)
		}
	}
	return active, nil
}

func (r *Reconciler) release(ctx context.Context, cs *appsv1alpha1.CloneSet, pod *corev1.Pod) error {
	patch := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"$patch":"delete","uid":%q}],"uid":%q}}`, cs.UID, pod.UID)
	err := r.Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, []byte(patch)))
	if err == nil {
		r.Recorder.Eventf(cs, pod, corev1.EventTypeNormal, "ReleasedPod", "Release", "released pod %s, which no longer matches the selector", pod.Name)
	}
	return client.IgnoreNotFound(err)
}

func (r *Reconciler) ownedPVCs(ctx context.Context, cs *appsv1alpha1.CloneSet) ([]*corev1.PersistentVolumeClaim, error) {
	list := &corev1.PersistentVolumeClaimList{}
	if err := r.List(ctx, list, client.InNamespace(cs.Namespace), client.MatchingFields{ownerIndex: string(cs.UID)}); err != nil {
		return nil, err
	}
	var pvcs []*corev1.PersistentVolumeClaim
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp == nil {
			pvcs = append(pvcs, &list.Items[i])
		}
	}
	return pvcs, nil
}

// writeStatus writes the status if it changed.
func (r *Reconciler) writeStatus(ctx context.Context, cs *appsv1alpha1.CloneSet, status appsv1alpha1.CloneSetStatus) error {
	if apiequality.Semantic.DeepEqual(cs.Status, status) {
		return nil
	}
	updated := cs.DeepCopy()
	updated.Status = status
	return r.Status().Update(ctx, updated)
}

// prunePodsToDelete removes from scaleStrategy.podsToDelete the names of
// pods that no longer exist.
func (r *Reconciler) prunePodsToDelete(ctx context.Context, cs *appsv1alpha1.CloneSet, all []*corev1.Pod) error {
	if len(cs.Spec.ScaleStrategy.PodsToDelete) == 0 {
		return nil
	}
	exists := map[string]bool{}
	for _, pod := range all {
		if pod.DeletionTimestamp == nil {
			exists[pod.Name] = true
		}
	}
	var keep []string
	for _, name := range cs.Spec.ScaleStrategy.PodsToDelete {
		if exists[name] {
			keep = append(keep, name)
		}
	}
	if len(keep) == len(cs.Spec.ScaleStrategy.PodsToDelete) {
		return nil
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": cs.ResourceVersion},
		"spec":     map[string]any{"scaleStrategy": map[string]any{"podsToDelete": keep}},
	})
	if err != nil {
		return err
	}
	err = r.Patch(ctx, cs.DeepCopy(), client.RawPatch(types.MergePatchType, patch))
	if apierrors.IsConflict(err) {
		return nil // a newer version will be reconciled and pruned
	}
	return err
}

// execute runs the plan's actions concurrently. Creations go in slow-start
// batches (1, 2, 4, ...) and stop at the first failing batch, so a quota or
// webhook that rejects pods costs one failed request, not hundreds.
func (r *Reconciler) execute(ctx context.Context, cs *appsv1alpha1.CloneSet, revs *revisions, actions []planner.Action) []error {
	var creates, others []planner.Action
	for _, a := range actions {
		if a.Type == planner.CreatePod {
			creates = append(creates, a)
		} else {
			others = append(others, a)
		}
	}
	var errs []error
	var mu sync.Mutex
	run := func(batch []planner.Action) int {
		var wg sync.WaitGroup
		failed := 0
		for _, a := range batch {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := r.act(ctx, cs, revs, a); err != nil {
					mu.Lock()
					errs = append(errs, err)
					failed++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		return failed
	}
	for size := 1; len(creates) > 0; size *= 2 {
		n := min(size, len(creates))
		if run(creates[:n]) > 0 {
			break
		}
		creates = creates[n:]
	}
	run(others)
	return errs
}

func (r *Reconciler) act(ctx context.Context, cs *appsv1alpha1.CloneSet, revs *revisions, a planner.Action) error {
	key := client.ObjectKeyFromObject(cs)
	now := r.Clock.Now()
	fail := func(action string, err error) error {
		var stale *staleError
		if !errors.As(err, &stale) {
			actionFailures.WithLabelValues(cs.Namespace, cs.Name, action).Inc()
		}
		return err
	}
	switch a.Type {
	case planner.CreatePod:
		cr := revs.update
		if a.Create.Revision == revs.current.Name {
			cr = revs.current
		}
		pod, err := newPod(cs, cr, a.Create.InstanceID, a.Create.State, now)
		if err != nil {
			return fail("create", err)
		}
		for _, pvc := range newPVCs(cs, a.Create.InstanceID) {
			if err := r.Create(ctx, pvc); err != nil && !apierrors.IsAlreadyExists(err) {
				r.Recorder.Eventf(cs, nil, corev1.EventTypeWarning, "FailedCreate", "Create", "failed to create pvc: %v", err)
				return fail("create", fmt.Errorf("creating pvc %s: %w", pvc.Name, err))
			}
		}
		if err := r.Create(ctx, pod); err != nil {
			r.Recorder.Eventf(cs, nil, corev1.EventTypeWarning, "FailedCreate", "Create", "failed to create pod: %v", err)
			return fail("create", fmt.Errorf("creating pod %s: %w", pod.Name, err))
		}
		r.expectations.ExpectCreated(key, pod.Name, pod.UID, now)
		podsCreated.WithLabelValues(cs.Namespace, cs.Name).Inc()
		r.Recorder.Eventf(cs, pod, corev1.EventTypeNormal, "SuccessfulCreate", "Create", "succeed to create pod %s (%s)", pod.Name, a.Reason)

	case planner.DeletePod:
		err := r.Delete(ctx, a.Pod, client.Preconditions{UID: &a.Pod.UID})
		if err != nil && !apierrors.IsNotFound(err) {
			r.Recorder.Eventf(cs, a.Pod, corev1.EventTypeWarning, "FailedDelete", "Delete", "failed to delete pod %s: %v", a.Pod.Name, err)
			return fail("delete", fmt.Errorf("deleting pod %s: %w", a.Pod.Name, err))
		}
		r.expectations.ExpectDeleted(key, a.Pod.Name, now)
		podsDeleted.WithLabelValues(cs.Namespace, cs.Name).Inc()
		r.Recorder.Eventf(cs, a.Pod, corev1.EventTypeNormal, "SuccessfulDelete", "Delete", "succeed to delete pod %s (%s)", a.Pod.Name, a.Reason)
		// The controller deleting a pod also deletes its volumes; only a
		// pod that vanished otherwise leaves them for its successor.
		if err := r.deletePVCs(ctx, cs, a.Pod.Labels[appsv1alpha1.CloneSetInstanceID]); err != nil {
			return fail("delete", err)
		}

	default:
		if a.Type == planner.UpdateInPlace && r.Budgets != nil {
			// No pod admission sees an in-place update: take its budget
			// here, before the pod leaves service.
			v, err := r.Budgets.Take(ctx, pubadmission.Request{Pod: a.Pod, Op: policyv1alpha1.PubUpdateOperation, User: budgetUser})
			if err != nil {
				return fail("update", err)
			}
			if !v.Allowed {
				r.Recorder.Eventf(cs, a.Pod, corev1.EventTypeWarning, "DisruptionNotAllowed", "Update", "%s: %s", a.Pod.Name, v.Reason)
				return &staleError{pod: a.Pod.Name, err: fmt.Errorf("PodUnavailableBudget %s: %s", v.Refused.Name, v.Reason)}
			}
		}
		if err := r.write(ctx, key, a); err != nil {
			var stale *staleError
			if !errors.As(err, &stale) && a.Type == planner.UpdateInPlace {
				r.Recorder.Eventf(cs, a.Pod, corev1.EventTypeWarning, "FailedUpdatePodInPlace", "Update", "failed to update pod %s in-place: %v", a.Pod.Name, err)
			}
			return fail(failureKind(a.Type), err)
		}
		r.recordWrite(cs, a, now)
	}
	return nil
}

// budgetUser is who the budget's events and counters name for the
// controller's in-place updates (OpenKruise names kruise-manager).
const budgetUser = "lifeline-manager"

// heldMessage says which pods wait for a disruption budget, and why.
func heldMessage(held []planner.Held) string {
	parts := make([]string, 0, len(held))
	for _, h := range held {
		parts = append(parts, fmt.Sprintf("%s: %s", h.Pod.Name, h.Reason))
	}
	return "waiting to disrupt pods the budget does not allow now: " + strings.Join(parts, "; ")
}

// staleRetry is when a CloneSet whose pod changed under a write is planned
// again at the latest.
const staleRetry = time.Second

func stateOrNone(pod *corev1.Pod) string {
	if s := podfacts.State(pod); s != "" {
		return string(s)
	}
	return "(none)"
}

// write sends the action's writes in order, each rendered as a guarded
// patch; one that fails stops the rest.
func (r *Reconciler) write(ctx context.Context, owner types.NamespacedName, a planner.Action) error {
	for _, w := range a.Writes {
		if err := r.applyPatch(ctx, owner, render(a.Pod, w)); err != nil {
			return err
		}
	}
	return nil
}

// failureKind is the action label of a failed write in the failure metric.
func failureKind(t planner.ActionType) string {
	if t == planner.SetState || t == planner.InitPodReady {
		return "patch"
	}
	return "update"
}

// recordWrite says, in events and metrics, what a write action did.
func (r *Reconciler) recordWrite(cs *appsv1alpha1.CloneSet, a planner.Action, now time.Time) {
	switch a.Type {
	case planner.SetState:
		r.Recorder.Eventf(cs, a.Pod, corev1.EventTypeNormal, "LifecycleStateChanged", "SetState",
			"pod %s: %s → %s (%s)", a.Pod.Name, stateOrNone(a.Pod), a.State(), a.Reason)
		if since := podfacts.StateSince(a.Pod); !since.IsZero() && podfacts.State(a.Pod) != "" {
			stateDuration.WithLabelValues(string(podfacts.State(a.Pod))).Observe(now.Sub(since).Seconds())
		}
	case planner.UpdateNextBatch:
		r.Recorder.Eventf(cs, a.Pod, corev1.EventTypeNormal, "InPlaceUpdateNextBatch", "Update",
			"pod %s: next in-place batch %v (%s)", a.Pod.Name, a.ImageNames(), a.Reason)
	case planner.UpdateInPlace:
		r.Recorder.Eventf(cs, a.Pod, corev1.EventTypeNormal, "SuccessfulUpdatePodInPlace", "Update",
			"successfully update pod %s in-place(revision %s)", a.Pod.Name, a.Revision())
	}
	for _, w := range a.Warnings {
		r.Recorder.Eventf(cs, a.Pod, corev1.EventTypeWarning, w.Reason, string(a.Type), "%s", w.Message)
	}
}

// applyPatch sends p to the pod, or to its status subresource when it sets
// conditions, and expects the cache to show the result.
func (r *Reconciler) applyPatch(ctx context.Context, owner types.NamespacedName, p *podpatch.Patch) error {
	written, err := podpatch.Send(ctx, r.Client, p)
	if err != nil {
		if podpatch.IsStale(err) {
			stalePatches.WithLabelValues(owner.Namespace, owner.Name).Inc()
			return &staleError{pod: p.Pod().Name, err: err}
		}
		return fmt.Errorf("patching pod %s: %w", p.Pod().Name, err)
	}
	if written != nil {
		r.expectations.ExpectChanged(owner, p.Pod().Name, p.Pod().ResourceVersion, written.ResourceVersion, r.Clock.Now())
	}
	return nil
}

// staleError is a write refused because the pod changed since it was
// planned. It is not a failure: the pod is planned again.
type staleError struct {
	pod string
	err error
}

func (e *staleError) Error() string {
	return fmt.Sprintf("pod %s changed since it was planned: %v", e.pod, e.err)
}

func (e *staleError) Unwrap() error { return e.err }

// releaseUnreusedPVCs applies disablePVCReuse before planning, so no new pod
// picks up an old instance's claims: a claim of a terminating pod is handed
// to that pod, to go with it, and a claim of no pod at all is deleted. It
// returns the PVCs left to the CloneSet.
func (r *Reconciler) releaseUnreusedPVCs(ctx context.Context, cs *appsv1alpha1.CloneSet, pvcs []*corev1.PersistentVolumeClaim, all []*corev1.Pod) ([]*corev1.PersistentVolumeClaim, error) {
	release := planner.UnreusedPVCs(cs, pvcs, all)
	if len(release) == 0 {
		return pvcs, nil
	}
	var kept []*corev1.PersistentVolumeClaim
	for _, pvc := range pvcs {
		pod, released := release[pvc]
		switch {
		case !released:
			kept = append(kept, pvc)
		case pod != nil:
			handed := pvc.DeepCopy()
			handed.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}}
			if err := r.Patch(ctx, handed, client.MergeFrom(pvc)); client.IgnoreNotFound(err) != nil {
				return nil, fmt.Errorf("handing pvc %s to pod %s: %w", pvc.Name, pod.Name, err)
			}
		default:
			if err := r.Delete(ctx, pvc); client.IgnoreNotFound(err) != nil {
				return nil, fmt.Errorf("deleting pvc %s: %w", pvc.Name, err)
			}
		}
	}
	return kept, nil
}

func (r *Reconciler) deletePVCs(ctx context.Context, cs *appsv1alpha1.CloneSet, id string) error {
	if id == "" || len(cs.Spec.VolumeClaimTemplates) == 0 {
		return nil
	}
	pvcs, err := r.ownedPVCs(ctx, cs)
	if err != nil {
		return err
	}
	for _, pvc := range pvcs {
		if pvc.Labels[appsv1alpha1.CloneSetInstanceID] == id {
			if err := r.Delete(ctx, pvc); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("deleting pvc %s: %w", pvc.Name, err)
			}
		}
	}
	return nil
}

func recordGauges(cs *appsv1alpha1.CloneSet, st *appsv1alpha1.CloneSetStatus) {
	desired := int32(1)
	if cs.Spec.Replicas != nil {
		desired = *cs.Spec.Replicas
	}
	for kind, v := range map[string]int32{
		"desired": desired, "current": st.Replicas, "updated": st.UpdatedReplicas, "ready": st.ReadyReplicas,
		"available": st.AvailableReplicas, "expected_updated": st.ExpectedUpdatedReplicas,
	} {
		replicasGauge.WithLabelValues(cs.Namespace, cs.Name, kind).Set(float64(v))
	}
}

func deleteGauges(namespace, name string) {
	replicasGauge.DeletePartialMatch(map[string]string{"namespace": namespace, "cloneset": name})
}

// randomID is a new instance id: five characters of Kubernetes' safe
// alphabet, as OpenKruise's, so pod names look alike.
func randomID() string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, 5)
	for i := range b {
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		b[i] = alphabet[n.Int64()]
	}
	return string(b)
}
