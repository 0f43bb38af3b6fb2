// Package admission guards pods with their PodUnavailableBudget at the
// pod admission entry point: a delete or an eviction that would take more
// pods out of service than the budget allows is refused, and one it allows
// is recorded in the budget's status before it is admitted, by a write
// conditional on the status version the decision read. Two admissions
// racing for the last allowed disruption therefore never both win, in one
// process, across replicas or across restarts: the loser's write conflicts
// and it decides again on the fresh status. Within a process, the
// disruptions of one budget that arrive together are decided in turn and
// recorded by one write, so a storm of evictions costs a few writes, not
// a conflict for every one.
package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/lifeline-k8s/lifeline/internal/podcache"
	"github.com/lifeline-k8s/lifeline/internal/workloadref"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/disruption"
	"github.com/lifeline-k8s/lifeline/internal/ownerindex"
	"github.com/lifeline-k8s/lifeline/internal/podadmission"
	"github.com/lifeline-k8s/lifeline/internal/podbudget/budget"
	"github.com/lifeline-k8s/lifeline/internal/podbudget/workload"
)

// attempts bounds the conditional status writes of one batch.
const attempts = 8

var (
	admissions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lifeline_pub_admissions_total",
		Help: "Disruptions judged against a PodUnavailableBudget, by budget (namespace/name), operation (DELETE, EVICT, UPDATE, RESIZE) and result (admitted, refused, free: no budget consumed, claimed: free on a record another replica or an earlier process made, which took a status write, unchecked: its gate is off).",
	}, []string{"budget", "operation", "result"})
	latency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "lifeline_pub_admission_duration_seconds",
		Help:    "How long judging one disruption against its PodUnavailableBudget took, status write included.",
		Buckets: prometheus.ExponentialBucketsRange(0.0002, 2, 24),
	})

	statusWrites = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "lifeline_pub_status_write_duration_seconds",
		Help:    "How long one conditional write of a PodUnavailableBudget's status by the admission took at the API server, by result (written, conflict, error).",
		Buckets: prometheus.ExponentialBucketsRange(0.0002, 2, 24),
	}, []string{"result"})
	settledDropped = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "lifeline_pub_settled_records_dropped_total",
		Help: "Records of disruptions that had happened (the pod terminating or gone) that the admission dropped from a PodUnavailableBudget's status in a write it made anyway, ahead of the controller.",
	})
	batchSize = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "lifeline_pub_admission_batch_size",
		Help:    "How many disruptions of one budget one status write decided.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 10),
	})
)

func init() {
	metrics.Registry.MustRegister(admissions, latency, statusWrites, settledDropped, batchSize)
}

// Guard is the PodUnavailableBudget pod admission feature. Its zero
// queues are ready to use; one process should have one Guard (see Take).
type Guard struct {
	// Cache reads pods, budgets and ReplicaSets; Live reads a budget
	// around the cache after a conflict; Writer writes budget status.
	Cache, Live client.Reader
	Writer      client.Client
	// Pods finds a pod in the cache without copying it (the manager's pod
	// index); without it pods are read through Cache, with a copy.
	Pods PodFinder
	// Synced says whether the cache holds every pod of a namespace yet
	// (internal/podcache); nil when it holds every pod of the cluster.
	Synced   podcache.Syncer
	Recorder events.EventRecorder
	Now      func() time.Time
	// Deadline bounds how long the admission of one request may take
	// (DefaultDeadline when zero): past it the request is answered 429,
	// to retry, before the API server's webhook timeout turns it into a
	// 500 that kubectl drain does not retry.
	Deadline time.Duration
	// Unchecked are the operations no budget is consulted for, as
	// OpenKruise's feature gates leave them out: DELETE and EVICT with
	// PodUnavailableBudgetDeleteGate off, UPDATE and RESIZE with
	// PodUnavailableBudgetUpdateGate off (the manager's --pub-delete-gate
	// and --pub-update-gate). Set before the guard serves.
	Unchecked map[policyv1alpha1.PubOperation]bool

	mu     sync.Mutex
	queues map[types.NamespacedName]*queue
	// unsettled counts, by budget and pod, records that may be orphans
	// (see markRecorded).
	unsettled map[types.NamespacedName]map[string]int
	// confirmed holds, by budget and pod, the second of each record this
	// process wrote and saw land (see isConfirmed).
	confirmed map[types.NamespacedName]map[string]int64
	// reviews holds the API server's recent answers on who may edit which
	// budget (see mayEdit).
	reviews *cache.LRUExpireCache
}

// PodFinder finds a cached pod by name; the pod is the cache's own and is
// only read.
type PodFinder interface {
	CachedPod(namespace, name string) (*corev1.Pod, bool)
}

// lookup finds pods of namespace for budget.DropSettled.
func (g *Guard) lookup(namespace string) func(string) (*corev1.Pod, bool) {
	var pods PodFinder = ownerindex.ListedPods{Reader: g.Cache}
	if g.Pods != nil {
		pods = g.Pods
	}
	return func(name string) (*corev1.Pod, bool) { return pods.CachedPod(namespace, name) }
}

// DefaultDeadline leaves half a second of the pod webhooks' 2 s timeout for
// the answer to reach the API server.
const DefaultDeadline = 1500 * time.Millisecond

// retryAfter is what a request the guard could not decide in time is told
// to wait before trying again.
const retryAfter = time.Second

// Validate judges a pod delete, eviction, update or resize against every
// budget covering the pod.
func (g *Guard) Validate(ctx context.Context, req admission.Request) admission.Response {
	start := time.Now()
	defer func() { latency.Observe(time.Since(start).Seconds()) }()
	deadline := g.Deadline
	if deadline <= 0 {
		deadline = DefaultDeadline
	}
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	r, err := g.disruption(ctx, req)
	switch {
	case err != nil:
		return podadmission.RetryLater(req, fmt.Sprintf("PodUnavailableBudget: cannot judge pod %s now: %v", req.Name, err), retryAfter)
	case r == nil:
		return admission.Allowed("")
	}
	r.User, r.DryRun = req.UserInfo.Username, dryRun(req)
	v, err := g.Take(ctx, *r)
	switch {
	case err != nil:
		return podadmission.RetryLater(req, fmt.Sprintf("Cannot %s pod %s now: %v; retry", verbs[r.Op], r.Pod.Name, err), retryAfter)
	case !v.Allowed && r.Exit.Why != "":
		return podadmission.RefuseDisruption(req, fmt.Sprintf("Cannot update pod %s: %s, which takes it out of %s (only who may edit the budget may do that now): %s",
			r.Pod.Name, r.Exit.Why, names(r.Exit.Budgets), v.Reason), v.Reason)
	case !v.Allowed:
		return podadmission.RefuseDisruption(req, fmt.Sprintf("Cannot %s pod %s: %s", verbs[r.Op], r.Pod.Name, v.Reason), v.Reason)
	}
	return admission.Allowed(v.Reason)
}

// dryRun reports whether req only asks: a dry-run request, or an eviction
// whose delete options ask for a dry run (kubectl drain --dry-run=server).
func dryRun(req admission.Request) bool {
	if ptr.Deref(req.DryRun, false) {
		return true
	}
	eviction := &policyv1.Eviction{}
	return podadmission.IsEviction(req) && json.Unmarshal(req.Object.Raw, eviction) == nil &&
		eviction.DeleteOptions != nil && len(eviction.DeleteOptions.DryRun) > 0
}

var verbs = map[policyv1alpha1.PubOperation]string{
	policyv1alpha1.PubDeleteOperation: "delete", policyv1alpha1.PubEvictOperation: "evict",
	policyv1alpha1.PubUpdateOperation: "update", policyv1alpha1.PubResizeOperation: "resize",
}

// disruption reads what a request would take out of service: the pod as
// it is now, the budget operation and, for an update that changes no spec
// but takes the pod out of budgets, those budgets; nil when the request
// disrupts nothing (an update of labels, a pod already gone).
func (g *Guard) disruption(ctx context.Context, req admission.Request) (*Request, error) {
	if req.Operation == admissionv1.Update {
		old, updated := &corev1.Pod{}, &corev1.Pod{}
		if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(req.Object.Raw, updated); err != nil {
			return nil, err
		}
		if op := budget.UpdateOperation(req.SubResource, old, updated); op != "" {
			return &Request{Pod: old, Op: op}, nil
		}
		if req.SubResource != "" {
			return nil, nil
		}
		return g.leaving(ctx, req, old, updated)
	}
	op := policyv1alpha1.PubDeleteOperation
	if podadmission.IsEviction(req) {
		op = policyv1alpha1.PubEvictOperation
	}
	pod, err := podadmission.DisruptedPod(ctx, g.Cache, g.Live, req)
	if pod == nil || err != nil {
		return nil, err
	}
	return &Request{Pod: pod, Op: op}, nil
}

// leaving is the disruption a metadata-only update leads to (see Exit):
// nil when it takes the pod out of no budget or its user may edit those it
// does.
func (g *Guard) leaving(ctx context.Context, req admission.Request, old, updated *corev1.Pod) (*Request, error) {
	exit, err := g.exit(ctx, old, updated)
	if err != nil || len(exit.Budgets) == 0 {
		return nil, err
	}
	if ok, err := g.mayEdit(ctx, req.UserInfo, exit.Budgets); ok || err != nil {
		return nil, err
	}
	// Charged as the delete it leads to, and so under the delete gate: the
	// record frees the slot once the pod is gone or the record expires.
	return &Request{Pod: old, Op: policyv1alpha1.PubDeleteOperation, Exit: exit}, nil
}

// Covering lists, among budgets (those of a namespace, in name order),
// every one guarding a pod with these labels whose workload is owner (nil
// for none): one whose target is that workload, or one whose selector
// matches the labels. A disruption must be admitted by each (OpenKruise
// charges only the first, so a second budget's limit could be bypassed).
func Covering(budgets []policyv1alpha1.PodUnavailableBudget, owner *metav1.OwnerReference, podLabels map[string]string) []*policyv1alpha1.PodUnavailableBudget {
	var out []*policyv1alpha1.PodUnavailableBudget
	for i := range budgets {
		b := &budgets[i]
		if t := b.Spec.TargetReference; t != nil {
			if owner != nil && workloadref.Same(workloadref.Ref{APIVersion: t.APIVersion, Kind: t.Kind, Name: t.Name}, workloadref.Owner(*owner)) {
				out = append(out, b)
			}
			continue
		}
		if budget.Selects(b.Spec.Selector).Matches(labels.Set(podLabels)) {
			out = append(out, b)
		}
	}
	return out
}

// budgetsOf finds the budgets guarding pod among those of its namespace,
// in name order (see Covering; a ReplicaSet's Deployment counts as its
// workload). It reads no pod annotation, so a pod is guarded from its
// first moment, whatever existed when the budget was made.
func (g *Guard) budgetsOf(ctx context.Context, pod *corev1.Pod) ([]*policyv1alpha1.PodUnavailableBudget, error) {
	list := &policyv1alpha1.PodUnavailableBudgetList{}
	// Read only (Covering copies nothing it returns into a write).
	if err := g.Cache.List(ctx, list, client.InNamespace(pod.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	var owner *metav1.OwnerReference
	if ref := metav1.GetControllerOf(pod); ref != nil {
		top, err := workload.Top(ctx, g.Cache, pod.Namespace, *ref)
		if err != nil {
			return nil, err
		}
		owner = &top
	}
	return Covering(list.Items, owner, pod.Labels), nil
}

// Check is the disruption check of one CloneSet plan (disruption.Check):
// the budgets of the CloneSet's namespace as the controller read them,
// each admitted disruption taken from them in memory, so that one plan
// never disrupts more pods than a budget allows. It writes nothing: a
// delete is recorded by the admission of the controller's own request, an
// in-place update by Take before the executor updates the pod.
type Check struct {
	budgets []policyv1alpha1.PodUnavailableBudget
	owner   metav1.OwnerReference
	now     time.Time
}

// ChecksFor is the disruption check a workload controller's plan
// consults: the budgets of the owner's namespace as read now; nil (allow
// everything) without budgets or without a guard.
func ChecksFor(ctx context.Context, g *Guard, reader client.Reader, namespace string, owner metav1.OwnerReference, now time.Time) (disruption.Check, error) {
	if g == nil {
		return nil, nil
	}
	list := &policyv1alpha1.PodUnavailableBudgetList{}
	if err := reader.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	return NewCheck(list.Items, owner, now), nil
}

// NewCheck returns the check for the pods of owner, against budgets.
func NewCheck(budgets []policyv1alpha1.PodUnavailableBudget, owner metav1.OwnerReference, now time.Time) *Check {
	copies := make([]policyv1alpha1.PodUnavailableBudget, len(budgets))
	for i := range budgets {
		budgets[i].DeepCopyInto(&copies[i])
	}
	sort.Slice(copies, func(i, j int) bool { return copies[i].Name < copies[j].Name })
	return &Check{budgets: copies, owner: owner, now: now}
}

// Allow judges one disruption against every budget covering the pod and,
// when all admit it, takes it from each in memory.
func (c *Check) Allow(pod *corev1.Pod, kind disruption.Kind) (bool, string) {
	op := policyv1alpha1.PubDeleteOperation
	if kind == disruption.InPlaceUpdate {
		op = policyv1alpha1.PubUpdateOperation
	}
	covering := Covering(c.budgets, &c.owner, pod.Labels)
	taken := make([]*policyv1alpha1.PodUnavailableBudgetStatus, len(covering))
	for i, b := range covering {
		d := budget.Admit(b, pod, op, c.now)
		if !d.Allowed {
			return false, d.Reason
		}
		taken[i] = d.Status
	}
	for i, b := range covering {
		if taken[i] != nil {
			b.Status = *taken[i]
		}
	}
	return true, ""
}
