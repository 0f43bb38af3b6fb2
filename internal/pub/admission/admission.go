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
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/disruption"
	"github.com/lifeline-k8s/lifeline/internal/podadmission"
	"github.com/lifeline-k8s/lifeline/internal/pub/budget"
	"github.com/lifeline-k8s/lifeline/internal/pub/workload"
)

// attempts bounds the conditional status writes of one batch.
const attempts = 8

var (
	admissions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lifeline_pub_admissions_total",
		Help: "Disruptions judged against a PodUnavailableBudget, by budget (namespace/name), operation (DELETE, EVICT, UPDATE, RESIZE) and result (admitted, refused, free: no budget consumed).",
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
	batchSize = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "lifeline_pub_admission_batch_size",
		Help:    "How many disruptions of one budget one status write decided.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 10),
	})
)

func init() { metrics.Registry.MustRegister(admissions, latency, statusWrites, batchSize) }

// Guard is the PodUnavailableBudget pod admission feature. Its zero
// queues are ready to use; one process should have one Guard (see Take).
type Guard struct {
	// Cache reads pods, budgets and ReplicaSets; Live reads a budget
	// around the cache after a conflict; Writer writes budget status.
	Cache, Live client.Reader
	Writer      client.Client
	Recorder    events.EventRecorder
	Now         func() time.Time

	mu     sync.Mutex
	queues map[types.NamespacedName]*queue
}

// Validate judges a pod delete, eviction, update or resize against the
// pod's budget.
func (g *Guard) Validate(ctx context.Context, req admission.Request) admission.Response {
	start := time.Now()
	defer func() { latency.Observe(time.Since(start).Seconds()) }()
	if req.UserInfo.Username == podadmission.GarbageCollector {
		return admission.Allowed("")
	}
	pod, op, err := g.disruption(ctx, req)
	switch {
	case err != nil:
		return admission.Errored(http.StatusInternalServerError, err)
	case pod == nil:
		return admission.Allowed("")
	}
	_, d, err := g.Take(ctx, pod, op, dryRun(req))
	switch {
	case err != nil:
		return admission.Errored(http.StatusInternalServerError, err)
	case !d.Allowed:
		return podadmission.RefuseDisruption(req, fmt.Sprintf("Cannot %s pod %s: %s", verbs[op], pod.Name, d.Reason), d.Reason)
	}
	return admission.Allowed(d.Reason)
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
// it is now and the budget operation, or a nil pod when the request
// disrupts nothing (an update of labels, a pod already gone).
func (g *Guard) disruption(ctx context.Context, req admission.Request) (*corev1.Pod, policyv1alpha1.PubOperation, error) {
	if req.Operation == admissionv1.Update {
		old, updated := &corev1.Pod{}, &corev1.Pod{}
		if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
			return nil, "", err
		}
		if err := json.Unmarshal(req.Object.Raw, updated); err != nil {
			return nil, "", err
		}
		op := budget.UpdateOperation(req.SubResource, old, updated)
		if op == "" {
			return nil, "", nil
		}
		return old, op, nil
	}
	op := policyv1alpha1.PubDeleteOperation
	if podadmission.IsEviction(req) {
		op = policyv1alpha1.PubEvictOperation
	}
	pod := &corev1.Pod{}
	if err := g.Cache.Get(ctx, types.NamespacedName{Namespace: req.Namespace, Name: req.Name}, pod); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, "", nil
		}
		return nil, "", err
	}
	return pod, op, nil
}

// BudgetFor finds, among budgets (those of a namespace, in name order),
// the one guarding a pod with these labels whose workload is owner (nil
// for none): one whose target is that workload, else one whose selector
// matches the labels.
func BudgetFor(budgets []policyv1alpha1.PodUnavailableBudget, owner *metav1.OwnerReference, podLabels map[string]string) *policyv1alpha1.PodUnavailableBudget {
	for i := range budgets {
		b := &budgets[i]
		if t := b.Spec.TargetReference; t != nil {
			if owner != nil && workload.Same(t.APIVersion, t.Kind, t.Name, *owner) {
				return b
			}
			continue
		}
		if b.Spec.Selector == nil {
			continue
		}
		s, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		if err == nil && !s.Empty() && s.Matches(labels.Set(podLabels)) {
			return b
		}
	}
	return nil
}

// budgetOf finds the budget guarding pod among those of its namespace, by
// name order: one whose target is the pod's workload (a ReplicaSet's
// Deployment counts as its workload), else one whose selector matches the
// pod's labels. It reads no pod annotation, so a pod is guarded from its
// first moment, whatever existed when the budget was made.
func (g *Guard) budgetOf(ctx context.Context, pod *corev1.Pod) (*policyv1alpha1.PodUnavailableBudget, error) {
	list := &policyv1alpha1.PodUnavailableBudgetList{}
	// Read only (BudgetFor copies nothing it returns into a write).
	if err := g.Cache.List(ctx, list, client.InNamespace(pod.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
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
	return BudgetFor(list.Items, owner, pod.Labels), nil
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

// NewCheck returns the check for the pods of owner, against budgets.
func NewCheck(budgets []policyv1alpha1.PodUnavailableBudget, owner metav1.OwnerReference, now time.Time) *Check {
	copies := make([]policyv1alpha1.PodUnavailableBudget, len(budgets))
	for i := range budgets {
		budgets[i].DeepCopyInto(&copies[i])
	}
	sort.Slice(copies, func(i, j int) bool { return copies[i].Name < copies[j].Name })
	return &Check{budgets: copies, owner: owner, now: now}
}

// Allow judges one disruption and, when admitted, takes it from the
// budget in memory.
func (c *Check) Allow(pod *corev1.Pod, kind disruption.Kind) (bool, string) {
	b := BudgetFor(c.budgets, &c.owner, pod.Labels)
	if b == nil {
		return true, ""
	}
	op := policyv1alpha1.PubDeleteOperation
	if kind == disruption.InPlaceUpdate {
		op = policyv1alpha1.PubUpdateOperation
	}
	d := budget.Admit(b, pod, op, c.now)
	if !d.Allowed {
		return false, d.Reason
	}
	if d.Status != nil {
		b.Status = *d.Status
	}
	return true, ""
}
