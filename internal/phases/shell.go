package phases

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	policyv1beta1 "github.com/lifeline-k8s/lifeline/api/policy/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/disruption"
	"github.com/lifeline-k8s/lifeline/internal/ownerindex"
	budgetadmission "github.com/lifeline-k8s/lifeline/internal/podbudget/admission"
	"github.com/lifeline-k8s/lifeline/internal/podexec"
	"github.com/lifeline-k8s/lifeline/internal/requeue"
	"github.com/lifeline-k8s/lifeline/internal/revision"
)

// Shell is what a workload controller is made of besides its own
// snapshot, planner and status: its clients, the executor with its
// expectations and metrics, the lister of its pods, and the record of its
// own status writes. Each kind's Reconciler embeds one, as Kubernetes'
// ReplicaSet controller serves two kinds from one.
type Shell struct {
	client.Client
	// APIReader reads around the cache, for the rare checks that must see
	// the latest state.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Clock     clock.Clock
	// Budgets are the PodUnavailableBudgets a plan consults before it
	// deletes a pod or updates it in place, and that an in-place update
	// takes its budget from; nil: no budgets.
	Budgets *budgetadmission.Guard
	// Pods lists each workload's pods; nil: through the client, which
	// copies every pod struct on each call (the manager passes the pod
	// informer's index).
	Pods ownerindex.PodLister
	// Expectations are the controller's writes its cache does not show
	// yet; nil: its own.
	Expectations *podexec.Expectations

	// Exec carries plans out; Setup makes it.
	Exec *podexec.Executor
	// OwnWrites are the controller's status writes the cache may not show
	// yet (WriteStatus records them, Read waits for them).
	OwnWrites podexec.OwnWrites
	metrics   podexec.Metrics
	hookWait  time.Duration
	pace      statusPace
}

// Options are what every workload controller is tuned by.
type Options struct {
	// Workers is how many workloads reconcile at once.
	Workers int
	// ExpectationTimeout bounds how long a write the cache never shows
	// holds a workload back (OpenKruise's update expectations never time
	// out, and stall a workload until its manager restarts).
	ExpectationTimeout time.Duration
	// HookWaitWarning is how long a pod may wait on a lifecycle hook
	// before a Warning event on its workload says so; 0 turns it off.
	HookWaitWarning time.Duration
}

// Kind is what Setup needs to know of a workload kind.
type Kind struct {
	// Name names the controller (its metrics and logs).
	Name string
	// For is an empty workload of the kind, in the version it is read in.
	For client.Object
	// BudgetUser is who the budget events and counters say disrupted a pod.
	BudgetUser string
	Metrics    podexec.Metrics
	// StatusEvery spaces the kind's routine status writes (statusPace):
	// a change of counts alone waits until this long after the last
	// write; 0: every change is written at once.
	StatusEvery time.Duration
	// StatusAtOnce names the status's int32 fields whose change is written
	// at once all the same (CountsOnly).
	StatusAtOnce []string
}

// NewExpectations returns the expectations a controller tuned by o keeps.
func NewExpectations(o Options) *podexec.Expectations {
	if o.ExpectationTimeout == 0 {
		o.ExpectationTimeout = 5 * time.Minute
	}
	return podexec.NewExpectations(o.ExpectationTimeout)
}

// Setup fills in the shell's defaults and its executor, and returns the
// builder of k's controller watching what every kind watches: its
// workloads, the pods and revisions they control (matched by the owner's
// group and kind, so pods whose reference names another version of the
// kind are seen too), and the budgets covering their pods (a budget that
// gains room lets held pods go at once, not at the next retry). The kind
// adds its own watches and completes it.
func (s *Shell) Setup(mgr ctrl.Manager, k Kind, o *Options) *builder.Builder {
	s.Init(k, o)
	owned := handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), k.For, handler.OnlyControllerOwner())
	gvk, err := apiutil.GVKForObject(k.For, mgr.GetScheme())
	if err != nil {
		panic(err) // a kind whose type is not in the scheme is a programming error
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(k.Name).
		For(k.For).
		Watches(&corev1.Pod{}, owned).
		Watches(&appsv1.ControllerRevision{}, owned).
		Watches(&policyv1beta1.PodUnavailableBudget{}, WakeCovered(s.Client, gvk.GroupKind()), builder.WithPredicates(RoomGained())).
		WithOptions(controller.Options{MaxConcurrentReconciles: o.Workers, RateLimiter: requeue.RateLimiter()})
}

// Init fills in the shell's defaults and its executor: Setup's part that
// needs no manager, which unit tests call.
func (s *Shell) Init(k Kind, o *Options) {
	if s.Clock == nil {
		s.Clock = clock.RealClock{}
	}
	if o.Workers == 0 {
		o.Workers = 3
	}
	if s.Expectations == nil {
		s.Expectations = NewExpectations(*o)
	}
	if s.Pods == nil {
		s.Pods = ownerindex.ListedPods{Reader: s.Client}
	}
	s.metrics, s.hookWait = k.Metrics, o.HookWaitWarning
	s.pace = statusPace{every: k.StatusEvery, atOnce: k.StatusAtOnce}
	s.Exec = &podexec.Executor{
		Client: s.Client, Live: s.APIReader, Recorder: s.Recorder, Clock: s.Clock,
		Budgets: s.Budgets, BudgetUser: k.BudgetUser, Expectations: s.Expectations, Metrics: k.Metrics,
	}
}

// Read is what every kind's snapshot starts from.
type Read struct {
	// Pods are the cache's own pods the workload controls, not copies:
	// planning and rendering never change a pod, and every write the
	// executor sends goes through a copy.
	Pods []*corev1.Pod
	Now  time.Time
}

// Read reads the workload req names into obj, and its pods once the cache
// shows the controller's own writes: planning from an older view would
// act twice on a pod, or write the status against a stale
// resourceVersion. It returns no Read, with when to look again, while the
// cache does not show them, and none for a workload that is gone (its
// records forgotten, and forget called).
func (s *Shell) Read(ctx context.Context, req ctrl.Request, obj client.Object, forget func(types.NamespacedName)) (*Read, ctrl.Result, error) {
	if err := s.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			s.Expectations.Forget(req.NamespacedName)
			s.OwnWrites.Forget(req.NamespacedName)
			s.pace.forget(req.NamespacedName)
			s.metrics.Forget(req.Namespace, req.Name)
			if forget != nil {
				forget(req.NamespacedName)
			}
		}
		return nil, ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !s.OwnWrites.Seen(req.NamespacedName, obj.GetResourceVersion()) {
		// Its event brings the workload back once the cache shows it.
		return nil, ctrl.Result{RequeueAfter: StaleRetry}, nil
	}
	now := s.Clock.Now()
	pods, err := s.Pods.OwnedPods(ctx, obj.GetNamespace(), string(obj.GetUID()))
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	if wait, err := s.Exec.CacheWait(ctx, obj, pods, now); wait > 0 || err != nil {
		return nil, ctrl.Result{RequeueAfter: wait}, err
	}
	return &Read{Pods: pods, Now: now}, ctrl.Result{}, nil
}

// WriteStatus writes *w's status if it changed (podexec.WriteStatus),
// recording the write for s's next Read, and keeps *w as stored so that a
// later write in the same reconcile is conditional on this one. A routine
// write of changed counts alone may wait (Kind.StatusEvery): it returns
// how long, and writes nothing.
func WriteStatus[T client.Object, S any](ctx context.Context, s *Shell, w *T, status S, field func(T) *S, routine bool) (time.Duration, error) {
	key, now := client.ObjectKeyFromObject(*w), s.Clock.Now()
	if routine {
		if wait := s.pace.wait(key, now); wait > 0 && CountsOnly(*field(*w), status, s.pace.atOnce...) {
			return wait, nil
		}
	}
	stored, err := podexec.WriteStatus(ctx, s.Client, &s.OwnWrites, *w, status, field)
	if err != nil {
		return 0, err
	}
	if stored.GetResourceVersion() != (*w).GetResourceVersion() {
		s.pace.wrote(key, now)
	}
	*w = stored
	return 0, nil
}

// Disruptions is the plan's disruption check for w, of kind: the budgets
// of its namespace as read now; nil without budgets.
func (s *Shell) Disruptions(ctx context.Context, w client.Object, kind schema.GroupVersionKind, now time.Time) (disruption.Check, error) {
	owner := metav1.OwnerReference{APIVersion: kind.GroupVersion().String(), Kind: kind.Kind, Name: w.GetName(), UID: w.GetUID()}
	return budgetadmission.ChecksFor(ctx, s.Budgets, s.Client, w.GetNamespace(), owner, now)
}

// Executed is when to look again after a step that asked for after:
// soon when a pod changed under one of its writes (the pod's own event
// normally brings the workload back first), never on a failure (the
// error is retried).
func Executed(after time.Duration, err error, stale bool) (time.Duration, error) {
	switch {
	case err != nil:
		return 0, err
	case stale:
		return StaleRetry, nil
	}
	return after, nil
}

// RevisionStore is where the kind's ControllerRevisions are read and
// written.
func (s *Shell) RevisionStore() revision.Store {
	return revision.Store{Client: s.Client, Live: s.APIReader}
}

// Tidy runs once a step's status is written: it deletes the oldest of w's
// revisions no pod uses beyond limit, and warns of pods waiting on a hook
// longer than HookWaitWarning, saying when the next one will be.
func (s *Shell) Tidy(ctx context.Context, w client.Object, revs *revision.Revisions, pods []*corev1.Pod, limit int, now time.Time) (time.Duration, error) {
	if err := s.RevisionStore().Truncate(ctx, revs, pods, limit); err != nil {
		return 0, err
	}
	return s.Exec.WarnHookWaits(w, pods, s.hookWait, now), nil
}

// HistoryLimit is a spec's revisionHistoryLimit, def when it is unset or
// negative.
func HistoryLimit(limit *int32, def int) int {
	if limit != nil && *limit >= 0 {
		return int(*limit)
	}
	return def
}

// Counted records w's counts in its kind's gauge.
func (s *Shell) Counted(w client.Object, counts map[string]int32) {
	s.metrics.SetCounts(w, counts)
}

// StaleRetry is when a workload whose pod changed under a write, or whose
// own write the cache does not show yet, is planned again at the latest:
// the change's own event normally brings it back sooner.
const StaleRetry = time.Second
