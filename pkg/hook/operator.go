package hook

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/pkg/podpatch"
	"github.com/lifeline-k8s/lifeline/pkg/recorder"
)

// Options configure an operator.
type Options struct {
	// Name names the operator: its controller, its events' reporter, its
	// metrics label, and the annotation and pod condition it writes on
	// pods (hook.lifeline.dev/<name>). Required; two operators handling
	// the same pods need different names.
	Name string
	// Follow names the workloads whose pods the operator handles, by kind
	// and label. Nil follows CloneSets only, those CloneSets selects.
	Follow []Follow
	// CloneSets selects, by label, the CloneSets whose pods the operator
	// handles when Follow is nil; nil handles every CloneSet's. With
	// Follow, it must be nil.
	CloneSets labels.Selector
	// Lifecycle names the handlers the operator owns, when several
	// operators share a workload's hooks. Nil owns every handler of the
	// workload's own spec.lifecycle.
	Lifecycle *pub.Lifecycle
	// CallTimeout bounds one handler call (default 30s).
	CallTimeout time.Duration
	// Timeout, if set, flags a pod whose moment is still not done this
	// long after it became due: a Warning event HookTimeout and the pod
	// condition hook.lifeline.dev/<name> False, cleared once it is done.
	// The hook stays held: a failing handler never lets a pod through.
	Timeout time.Duration
	// MinBackoff and MaxBackoff bound the delay before a failed handler
	// is called again, doubling from one to the other (default 1s, 5m).
	MinBackoff, MaxBackoff time.Duration
	// Workers is how many pods are handled at once (default 4).
	Workers int
	// Clock is for tests; the real clock by default.
	Clock clock.Clock
}

// The permissions any hook operator needs, generated into
// config/bridge/role.yaml for the bridge.
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=patch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=clonesets;statefulsets;daemonsets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// An operator that serves its metrics to authenticated, authorized
// scrapers (as lifeline-bridge does) delegates both to the API server.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
// Leader election, so that of several replicas one handles the pods: its
// lease, in the operator's own namespace only (lifeline-system here; the
// chart's Role narrows get and update to the bridge's lease by name). Its
// pod writes are narrowed by content by the admission policy
// config/bridge/policy.yaml.
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=lifeline-system,resources=leases,verbs=get;create;update

// Add registers an operator that calls h at each moment of the pods of the
// followed workloads and releases their hooks, with mgr. The manager's
// scheme gets the workload types.
func Add(mgr ctrl.Manager, h Handlers, o Options) error {
	if err := validateName(o.Name); err != nil {
		return err
	}
	if o.Follow != nil && o.CloneSets != nil {
		return errors.New("hook: Options.CloneSets and Options.Follow are exclusive: put the CloneSet selector in Follow")
	}
	if err := ValidateFollow(o.Follow); err != nil {
		return err
	}
	if err := AddToScheme(mgr.GetScheme()); err != nil {
		return err
	}
	o = withDefaults(o)
	broadcaster, err := recorder.New(mgr.GetConfig(), mgr.GetHTTPClient(), mgr.GetScheme())
	if err != nil {
		return err
	}
	if err := mgr.Add(broadcaster); err != nil {
		return err
	}
	op := &operator{
		client: mgr.GetClient(), recorder: broadcaster.For("hook-" + o.Name),
		handlers: h, opts: o, handled: map[types.NamespacedName]string{},
	}
	limiter := workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](o.MinBackoff, o.MaxBackoff)
	b := ctrl.NewControllerManagedBy(mgr).
		Named("hook-"+o.Name).
		For(&corev1.Pod{}, builder.WithPredicates(predicate.NewPredicateFuncs(op.ownedByFollowed)))
	for _, f := range o.Follow {
		k, _ := f.Kind.describe() // validated by New
		b = b.Watches(k.New(), handler.EnqueueRequestsFromMapFunc(op.podsOf))
	}
	return b.WithOptions(controller.Options{MaxConcurrentReconciles: o.Workers, RateLimiter: limiter}).Complete(op)
}

func withDefaults(o Options) Options {
	if o.CallTimeout == 0 {
		o.CallTimeout = 30 * time.Second
	}
	if o.MinBackoff == 0 {
		o.MinBackoff = time.Second
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = 5 * time.Minute
	}
	if o.Workers == 0 {
		o.Workers = 4
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Follow == nil {
		o.Follow = []Follow{{Kind: KindCloneSet, Selector: o.CloneSets}}
	}
	return o
}

type operator struct {
	client   client.Client
	recorder events.EventRecorder
	handlers Handlers
	opts     Options

	mu sync.Mutex
	// handled holds, per pod (by name, so a pod that is gone is forgotten
	// too; the key names its UID), the Event.Key of a moment whose handler
	// returned nil but whose release is not written yet, so a release that
	// must be retried does not call the handler again.
	handled map[types.NamespacedName]string
}

// Reconcile handles one pod: it calls the handler of the moment due, if
// any, and then releases the hook in one write guarded by the labels and
// finalizers it read, so a release never lands on a pod that moved on.
func (op *operator) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	if err := op.client.Get(ctx, req.NamespacedName, pod); err != nil {
		if apierrors.IsNotFound(err) {
			op.forget(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	w, ok, err := WorkloadOf(ctx, op.client, op.opts.Follow, pod)
	if err != nil || !ok {
		return reconcile.Result{}, err
	}
	hooks := op.opts.Lifecycle
	if hooks == nil {
		hooks = w.Lifecycle
	}
	now := op.opts.Clock.Now()
	s, ok := due(pod, hooks, lastRecord(pod, op.opts.Name), now)
	if !ok {
		op.forget(req.NamespacedName)
		return reconcile.Result{}, nil
	}
	e := Event{Moment: s.moment, Pod: pod, Workload: w, Revision: s.revision,
		Key: fmt.Sprintf("%s/%s/%s/%s", op.opts.Name, pod.UID, s.moment, s.revision)}
	e.CloneSet, _ = w.Object.(*appsv1beta1.CloneSet)
	if !op.wasHandled(req.NamespacedName, e.Key) {
		if err := op.call(ctx, e); err != nil {
			return reconcile.Result{}, errors.Join(err, op.flagIfLate(ctx, pod, s, err, now))
		}
		op.remember(req.NamespacedName, e.Key)
	}
	if err := op.release(ctx, pod, s, now); err != nil {
		if podpatch.IsStale(err) {
			// The pod changed since it was read; its own event brings it
			// back, and the handler is not called again.
			log.FromContext(ctx).V(1).Info("pod changed before its release; reading it again", "moment", s.moment)
			return reconcile.Result{RequeueAfter: time.Second}, nil
		}
		return reconcile.Result{}, err
	}
	op.forget(req.NamespacedName)
	// About the workload, as the controllers' routine Events are: one
	// per pod would not be rate-limited with them. The pod keeps the
	// record (hook.lifeline.dev/<name>), which kubectl lifeline explain
	// reads.
	op.recorder.Eventf(w.Object, pod, corev1.EventTypeNormal, "HookCompleted", string(s.moment),
		"%s: pod %s: %s done at revision %s; hook released", op.opts.Name, pod.Name, s.moment, s.revision)
	return reconcile.Result{}, nil
}

// call runs the moment's handler, if any, bounded by CallTimeout, and says
// how it went in the metrics, and in a Warning when it failed (its success
// is HookCompleted's).
func (op *operator) call(ctx context.Context, e Event) error {
	h := op.handlers.of(e.Moment)
	if h == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, op.opts.CallTimeout)
	defer cancel()
	start := op.opts.Clock.Now()
	err := safeCall(ctx, h, e)
	took := op.opts.Clock.Since(start)
	result := "ok"
	if err != nil {
		result = "error"
		handlerFailures.WithLabelValues(op.opts.Name, string(e.Moment)).Inc()
		op.recorder.Eventf(e.Pod, e.Workload.Object, corev1.EventTypeWarning, "HookHandlerFailed", string(e.Moment),
			"%s: %s handler failed after %s (the hook stays held; retrying): %v", op.opts.Name, e.Moment, took.Round(time.Millisecond), err)
	}
	handlerDuration.WithLabelValues(op.opts.Name, string(e.Moment), result).Observe(took.Seconds())
	return err
}

// safeCall turns a handler's panic into its error, so one bad call does
// not take the operator down with the hooks it holds.
func safeCall(ctx context.Context, h Handler, e Event) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panicked: %v", r)
		}
	}()
	return h(ctx, e)
}

// release writes the step's hook change and the record of its moment in
// one patch, and clears the timeout flag if the pod carries it.
func (op *operator) release(ctx context.Context, pod *corev1.Pod, s step, now time.Time) error {
	p := podpatch.New(pod, true)
	if len(s.setLabels) > 0 || len(s.removeLabels) > 0 {
		p.SetLabels(s.setLabels, s.removeLabels...)
	}
	if len(s.addFinalizers) > 0 {
		p.AddFinalizers(s.addFinalizers)
	}
	if len(s.removeFinalizers) > 0 {
		p.RemoveFinalizers(s.removeFinalizers)
	}
	p.SetAnnotation(recordKey(op.opts.Name), record{Moment: s.moment, Revision: s.revision, At: now.UTC().Truncate(time.Second)}.String())
	if c, ok := flag(pod, op.opts.Name); ok && c.Status == corev1.ConditionFalse {
		p.SetCondition(corev1.PodCondition{Type: c.Type, Status: corev1.ConditionTrue, Reason: "Completed",
			Message: fmt.Sprintf("%s done", s.moment), LastTransitionTime: metav1.NewTime(now)})
	}
	return op.send(ctx, p)
}

// flagIfLate flags the pod once its moment has been due for longer than
// Timeout: a Warning event and the condition hook.lifeline.dev/<name>
// False, written once. Nothing else changes: the hook stays held.
func (op *operator) flagIfLate(ctx context.Context, pod *corev1.Pod, s step, cause error, now time.Time) error {
	if op.opts.Timeout <= 0 || s.since.IsZero() || now.Sub(s.since) < op.opts.Timeout {
		return nil
	}
	if c, ok := flag(pod, op.opts.Name); ok && c.Status == corev1.ConditionFalse {
		return nil
	}
	msg := fmt.Sprintf("%s not done %s after it became due: %v", s.moment, now.Sub(s.since).Round(time.Second), cause)
	p := podpatch.New(pod, false)
	p.SetCondition(corev1.PodCondition{Type: corev1.PodConditionType(recordKey(op.opts.Name)), Status: corev1.ConditionFalse,
		Reason: "HandlerTimeout", Message: msg, LastTransitionTime: metav1.NewTime(now)})
	if err := op.send(ctx, p); err != nil && !podpatch.IsStale(err) {
		return err
	}
	timeouts.WithLabelValues(op.opts.Name, string(s.moment)).Inc()
	op.recorder.Eventf(pod, nil, corev1.EventTypeWarning, "HookTimeout", string(s.moment), "%s: %s", op.opts.Name, msg)
	return nil
}

func flag(pod *corev1.Pod, name string) (corev1.PodCondition, bool) {
	for _, c := range pod.Status.Conditions {
		if string(c.Type) == recordKey(name) {
			return c, true
		}
	}
	return corev1.PodCondition{}, false
}

func (op *operator) send(ctx context.Context, p *podpatch.Patch) error {
	_, err := podpatch.Send(ctx, op.client, p)
	return err
}

// podsOf maps a workload to its pods, so a change of its lifecycle is
// seen.
func (op *operator) podsOf(ctx context.Context, obj client.Object) []reconcile.Request {
	w, ok := workloadOf(obj)
	if !ok {
		return nil
	}
	pods, err := PodsOf(ctx, op.client, w)
	if err != nil {
		log.FromContext(ctx).Error(err, "listing a workload's pods", "kind", w.Kind, "workload", w.Name())
		return nil
	}
	out := make([]reconcile.Request, 0, len(pods))
	for _, pod := range pods {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(pod)})
	}
	return out
}

func (op *operator) ownedByFollowed(obj client.Object) bool {
	_, _, ok := followed(op.opts.Follow, metav1.GetControllerOf(obj))
	return ok
}

func (op *operator) wasHandled(pod types.NamespacedName, key string) bool {
	op.mu.Lock()
	defer op.mu.Unlock()
	return op.handled[pod] == key
}

func (op *operator) remember(pod types.NamespacedName, key string) {
	op.mu.Lock()
	defer op.mu.Unlock()
	op.handled[pod] = key
}

func (op *operator) forget(pod types.NamespacedName) {
	op.mu.Lock()
	defer op.mu.Unlock()
	delete(op.handled, pod)
}
