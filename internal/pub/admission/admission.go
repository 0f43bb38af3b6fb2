// Package admission guards pods with their PodUnavailableBudget at the
// pod admission entry point: a delete or an eviction that would take more
// pods out of service than the budget allows is refused, and one it allows
// is recorded in the budget's status before it is admitted, by a write
// conditional on the status version the decision read. Two admissions
// racing for the last allowed disruption therefore never both win, in one
// process, across replicas or across restarts: the loser's write conflicts
// and it decides again on the fresh status.
package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
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
	"github.com/lifeline-k8s/lifeline/internal/podadmission"
	"github.com/lifeline-k8s/lifeline/internal/pub/budget"
	"github.com/lifeline-k8s/lifeline/internal/pub/workload"
)

// Targets are what the budget guards at admission so far: pod DELETE and
// pods/eviction CREATE.
var Targets = []podadmission.Target{
	{Operation: admissionv1.Delete},
	{SubResource: "eviction", Operation: admissionv1.Create},
}

// GarbageCollector is never refused: a budget must not keep the pods of a
// deleted workload.
const GarbageCollector = "system:serviceaccount:kube-system:generic-garbage-collector"

// attempts bounds the conditional status writes of one admission.
const attempts = 5

var (
	admissions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lifeline_pub_admissions_total",
		Help: "Disruptions judged against a PodUnavailableBudget, by budget (namespace/name), operation (DELETE, EVICT) and result (admitted, refused, free: no budget consumed).",
	}, []string{"budget", "operation", "result"})
	latency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "lifeline_pub_admission_duration_seconds",
		Help:    "How long judging one disruption against its PodUnavailableBudget took, status write included.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
	})
)

func init() { metrics.Registry.MustRegister(admissions, latency) }

// Guard is the PodUnavailableBudget pod admission feature.
type Guard struct {
	// Cache reads pods, budgets and ReplicaSets; Live reads a budget
	// around the cache after a conflict; Writer writes budget status.
	Cache, Live client.Reader
	Writer      client.Client
	Recorder    events.EventRecorder
	Now         func() time.Time
}

// Validate judges a pod delete or eviction against the pod's budget.
func (g *Guard) Validate(ctx context.Context, req admission.Request) admission.Response {
	start := time.Now()
	defer func() { latency.Observe(time.Since(start).Seconds()) }()
	if req.UserInfo.Username == GarbageCollector {
		return admission.Allowed("")
	}
	op, dryRun := policyv1alpha1.PubDeleteOperation, false
	if req.SubResource == "eviction" {
		op = policyv1alpha1.PubEvictOperation
		eviction := &policyv1.Eviction{}
		if err := json.Unmarshal(req.Object.Raw, eviction); err == nil && eviction.DeleteOptions != nil {
			dryRun = len(eviction.DeleteOptions.DryRun) > 0
		}
	} else {
		dryRun = ptr.Deref(req.DryRun, false)
	}
	pod := &corev1.Pod{}
	if err := g.Cache.Get(ctx, types.NamespacedName{Namespace: req.Namespace, Name: req.Name}, pod); err != nil {
		if apierrors.IsNotFound(err) {
			return admission.Allowed("")
		}
		return admission.Errored(http.StatusInternalServerError, err)
	}
	pub, err := g.budgetOf(ctx, pod)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if pub == nil {
		return admission.Allowed("")
	}
	key := pub.Namespace + "/" + pub.Name
	for i := 0; i < attempts; i++ {
		d := budget.Admit(pub, pod, op, g.Now())
		switch {
		case !d.Allowed:
			admissions.WithLabelValues(key, string(op), "refused").Inc()
			g.Recorder.Eventf(pod, pub, corev1.EventTypeWarning, "PubPreventPodDeletion", string(op), "%s", d.Reason)
			return refuse(op, pub, pod, d.Reason)
		case d.Status == nil:
			admissions.WithLabelValues(key, string(op), "free").Inc()
			return admission.Allowed(d.Reason)
		case dryRun:
			admissions.WithLabelValues(key, string(op), "admitted").Inc()
			return admission.Allowed(d.Reason + " (dry run: nothing recorded)")
		}
		updated := pub.DeepCopy()
		updated.Status = *d.Status
		err := g.Writer.Status().Update(ctx, updated)
		if err == nil {
			admissions.WithLabelValues(key, string(op), "admitted").Inc()
			return admission.Allowed(d.Reason)
		}
		if apierrors.IsNotFound(err) {
			return admission.Allowed("")
		}
		if !apierrors.IsConflict(err) {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		// Someone else took budget, or the controller recomputed it:
		// decide again on what is there now.
		fresh := &policyv1alpha1.PodUnavailableBudget{}
		if err := g.Live.Get(ctx, client.ObjectKeyFromObject(pub), fresh); err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		pub = fresh
	}
	admissions.WithLabelValues(key, string(op), "refused").Inc()
	return refuse(op, pub, pod, fmt.Sprintf("PodUnavailableBudget %s is being updated by too many disruptions at once; try again", pub.Name))
}

// refuse answers a refused disruption: an eviction as Kubernetes' eviction
// API answers a PodDisruptionBudget (429, so kubectl drain retries), a
// delete with 403.
func refuse(op policyv1alpha1.PubOperation, pub *policyv1alpha1.PodUnavailableBudget, pod *corev1.Pod, reason string) admission.Response {
	code, statusReason := int32(http.StatusForbidden), metav1.StatusReasonForbidden
	if op == policyv1alpha1.PubEvictOperation {
		code, statusReason = http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests
	}
	verb := "delete"
	if op == policyv1alpha1.PubEvictOperation {
		verb = "evict"
	}
	msg := fmt.Sprintf("Cannot %s pod %s: %s", verb, pod.Name, reason)
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{
		Status: metav1.StatusFailure, Code: code, Reason: statusReason, Message: msg,
		Details: &metav1.StatusDetails{Name: pod.Name, Kind: "pods", Causes: []metav1.StatusCause{{Type: "DisruptionBudget", Message: reason}}},
	}}}
}

// budgetOf finds the budget guarding pod among those of its namespace, by
// name order: one whose target is the pod's workload (a ReplicaSet's
// Deployment counts as its workload), else one whose selector matches the
// pod's labels. It reads no pod annotation, so a pod is guarded from its
// first moment, whatever existed when the budget was made.
func (g *Guard) budgetOf(ctx context.Context, pod *corev1.Pod) (*policyv1alpha1.PodUnavailableBudget, error) {
	list := &policyv1alpha1.PodUnavailableBudgetList{}
	if err := g.Cache.List(ctx, list, client.InNamespace(pod.Namespace)); err != nil {
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
	for i := range list.Items {
		b := &list.Items[i]
		if t := b.Spec.TargetReference; t != nil {
			if owner != nil && workload.Same(t.APIVersion, t.Kind, t.Name, *owner) {
				return b, nil
			}
			continue
		}
		if b.Spec.Selector == nil {
			continue
		}
		s, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		if err == nil && !s.Empty() && s.Matches(labels.Set(pod.Labels)) {
			return b, nil
		}
	}
	return nil, nil
}
