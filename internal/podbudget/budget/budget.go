// Package budget holds the arithmetic of a PodUnavailableBudget, pure: how
// many of its pods must stay available, which it counts as available now,
// how many more may go, and whether one disruption is admitted. The
// controller computes the status with it and the pod admission decides
// with it, so both count the same way (OpenKruise v1.9's rules, reference
// Part A).
package budget

import (
	"fmt"
	"math"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	policyv1beta1 "github.com/lifeline-k8s/lifeline/api/policy/v1beta1"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

const (
	// DeletionTimeout is how long a pod admitted for deletion or eviction
	// counts as disrupted while the controller has not seen it go.
	DeletionTimeout = policyv1beta1.DisruptedPodTimeout
	// UpdateTimeout is how long a pod admitted for an update counts as
	// unavailable before its readiness decides again.
	UpdateTimeout = policyv1beta1.UnavailablePodTimeout
	// MaxRecords bounds disruptedPods plus unavailablePods: beyond it the
	// controller is too far behind to admit more.
	MaxRecords = 2000
)

// DesiredAvailable is how many of expected pods must stay available:
// expected minus maxUnavailable (a percent rounded up), or minAvailable (a
// percent rounded up; an integer is not clamped to expected, as in
// OpenKruise, so a minAvailable above the replicas allows nothing).
func DesiredAvailable(spec policyv1alpha1.PodUnavailableBudgetSpec, expected int32) (int32, error) {
	if expected < 0 {
		expected = 0
	}
	switch {
	case spec.MaxUnavailable != nil:
		maxUnavailable, err := intstr.GetScaledValueFromIntOrPercent(spec.MaxUnavailable, int(expected), true)
		if err != nil {
			return 0, fmt.Errorf("maxUnavailable: %w", err)
		}
		return max(0, expected-clampInt32(maxUnavailable)), nil
	case spec.MinAvailable != nil:
		if spec.MinAvailable.Type == intstr.Int {
			return spec.MinAvailable.IntVal, nil
		}
		minAvailable, err := intstr.GetScaledValueFromIntOrPercent(spec.MinAvailable, int(expected), true)
		if err != nil {
			return 0, fmt.Errorf("minAvailable: %w", err)
		}
		return clampInt32(minAvailable), nil
	}
	return 0, nil
}

func clampInt32(v int) int32 {
	if v > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(v)
}

// Ready is a pod that counts towards a budget: running, Ready, not being
// deleted, without an unavailable-pod.kruise.io/ label, and with no
// in-place update under way (OpenKruise's "ready and state-consistent").
// A pod that is not is already unavailable: disrupting it costs nothing.
func Ready(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning {
		return false
	}
	for k := range pod.Labels {
		if strings.HasPrefix(k, policyv1alpha1.PodUnavailableLabelPrefix) {
			return false
		}
	}
	return podfacts.HasReadyCondition(pod) && podfacts.Grace(pod) == nil && (podfacts.InPlaceUpdateState(pod) == nil || podfacts.InPlaceUpdateDone(pod))
}

// Snapshot is what a budget's status is computed from.
type Snapshot struct {
	Spec       policyv1alpha1.PodUnavailableBudgetSpec
	Generation int64
	// Status is the stored status, whose records of admitted disruptions
	// carry over while they last.
	Status policyv1alpha1.PodUnavailableBudgetStatus
	// Pods are the budget's active pods: not finished, not being deleted.
	Pods []*corev1.Pod
	// Expected is how many pods the budget expects (its workloads'
	// replicas, or the protect-total-replicas override).
	Expected int32
	Now      time.Time
}

// Computed is a budget's new status, and what the controller should do
// about it.
type Computed struct {
	Status policyv1alpha1.PodUnavailableBudgetStatus
	// NotDeleted are pods admitted for deletion that are still there once
	// their record expired (a Warning event each, as OpenKruise).
	NotDeleted []string
	// RecheckAfter is when the first record left expires, or 0.
	RecheckAfter time.Duration
}

// Status computes a budget's status: records of admitted disruptions kept
// while they last and their pods exist, available pods counted among the
// rest, and unavailableAllowed what is left above desiredAvailable.
func Status(s Snapshot) (Computed, error) {
	desired, err := DesiredAvailable(s.Spec, s.Expected)
	if err != nil {
		return Computed{}, err
	}
	exists := map[string]*corev1.Pod{}
	for _, pod := range s.Pods {
		exists[pod.Name] = pod
	}
	var c Computed
	var recheck time.Time
	keep := func(records map[string]metav1.Time, timeout time.Duration, expired func(string)) map[string]metav1.Time {
		out := map[string]metav1.Time{}
		for name, at := range records {
			if _, ok := exists[name]; !ok {
				continue
			}
			until := at.Add(timeout)
			if !until.After(s.Now) {
				expired(name)
				continue
			}
			out[name] = at
			if recheck.IsZero() || until.Before(recheck) {
				recheck = until
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	disrupted := keep(s.Status.DisruptedPods, DeletionTimeout, func(name string) { c.NotDeleted = append(c.NotDeleted, name) })
	unavailable := keep(s.Status.UnavailablePods, UpdateTimeout, func(string) {})
	var available int32
	for _, pod := range s.Pods {
		_, d := disrupted[pod.Name]
		_, u := unavailable[pod.Name]
		if !d && !u && Ready(pod) {
			available++
		}
	}
	// Pods beyond the expected count (a surge, or pods a CloneSet will
	// replace because they carry apps.kruise.io/specified-delete) add no
	// room: OpenKruise counts them and then allows more disruptions than
	// maxUnavailable (openkruise/kruise#2175, open); so a budget never
	// allows more than expected minus desired.
	counted := available
	if s.Expected > 0 {
		counted = min(available, s.Expected)
	}
	c.Status = policyv1alpha1.PodUnavailableBudgetStatus{
		ObservedGeneration: s.Generation,
		DisruptedPods:      disrupted, UnavailablePods: unavailable,
		DesiredAvailable: desired, CurrentAvailable: available,
		UnavailableAllowed: max(0, counted-desired),
		TotalReplicas:      max(0, s.Expected),
	}
	if !recheck.IsZero() {
		c.RecheckAfter = recheck.Sub(s.Now)
	}
	return c, nil
}

// AbsentGrace is how old a record must be before the absence of its pod
// from a cache says the pod is gone rather than not yet seen: a pod just
// created and evicted at once may be recorded before the cache shows it.
const AbsentGrace = 3 * time.Second // 2 s, past records cut to the second

// DropSettled removes from st the records of disruptions that have
// happened: the pod is terminating or finished, or gone (absent from the
// cache for a record older than AbsentGrace). lookup finds a pod by name
// in the cache. The counts stay: such a pod counts as unavailable with or
// without its record, which Status drops on its next computation anyway.
// It returns how many records it dropped.
//
// The admission applies it before each status write: under a storm of
// evictions the controller's own writes lose to the admission's on every
// conflict, so without it the records pile up towards MaxRecords, and the
// API server's cost of a status write grows with them (about 55 µs a
// record on an idle API server: 113 ms a write at 2000).
func DropSettled(st *policyv1alpha1.PodUnavailableBudgetStatus, lookup func(name string) (*corev1.Pod, bool), now time.Time) int {
	dropped := 0
	for _, records := range []map[string]metav1.Time{st.DisruptedPods, st.UnavailablePods} {
		for name, at := range records {
			pod, found := lookup(name)
			if found && podfacts.IsActive(pod) || !found && now.Sub(at.Time) < AbsentGrace {
				continue
			}
			delete(records, name)
			dropped++
		}
	}
	return dropped
}

// Protects reports whether a budget with these annotations guards op:
// the kruise.io/pub-protect-operations list, or DELETE, UPDATE and EVICT
// when it is absent or empty. RESIZE is guarded only when listed
// (OpenKruise v1.9 with in-place vertical scaling on).
func Protects(annotations map[string]string, op policyv1alpha1.PubOperation) bool {
	list := annotations[policyv1alpha1.PubProtectOperationAnnotation]
	if list == "" {
		return op == policyv1alpha1.PubDeleteOperation || op == policyv1alpha1.PubUpdateOperation || op == policyv1alpha1.PubEvictOperation
	}
	for _, item := range strings.Split(list, ",") {
		if policyv1alpha1.PubOperation(strings.TrimSpace(item)) == op {
			return true
		}
	}
	return false
}

// Decision is the answer to one disruption.
type Decision struct {
	Allowed bool
	// Reason says why it is refused, naming the budget and its numbers,
	// or why it is let through without consuming the budget.
	Reason string
	// Status, when the disruption consumes the budget, is the status to
	// write (optimistically, on the version read) before answering.
	Status *policyv1alpha1.PodUnavailableBudgetStatus
	// RecordedAt, when the disruption costs nothing because the pod is
	// already recorded, is the record's time.
	RecordedAt time.Time
}

// Admit decides whether pod may be disrupted by op under the budget pub,
// and how the status records it. A pod that is already unavailable, or
// already recorded, costs nothing; otherwise one unit of
// unavailableAllowed is taken and the pod recorded (UPDATE in
// unavailablePods, anything else in disruptedPods).
func Admit(pub *policyv1alpha1.PodUnavailableBudget, pod *corev1.Pod, op policyv1alpha1.PubOperation, now time.Time) Decision {
	next := pub.Status.DeepCopy()
	d := AdmitInto(pub, next, pod, op, now)
	if d.Status != nil {
		d.Status = next
	}
	return d
}

// Free reports whether disrupting pod by op costs a budget with these
// annotations and status nothing, and why: the pod opts out, is already
// unavailable, or is already recorded; the budget requires no pod or does
// not guard op. It reads status without copying it, so the admission can
// answer these at once on the cached budget.
func Free(annotations map[string]string, st *policyv1alpha1.PodUnavailableBudgetStatus, pod *corev1.Pod, op policyv1alpha1.PubOperation) (Decision, bool) {
	switch {
	case pod.Annotations[policyv1alpha1.PodPubNoProtectionAnnotation] == "true":
		return Decision{Allowed: true, Reason: "the pod opts out of budgets"}, true
	case !Ready(pod):
		return Decision{Allowed: true, Reason: "the pod is already unavailable"}, true
	case st.DesiredAvailable == 0:
		return Decision{Allowed: true, Reason: "the budget requires no pod available"}, true
	case !Protects(annotations, op):
		return Decision{Allowed: true, Reason: fmt.Sprintf("the budget does not guard %s", op)}, true
	}
	if at, disrupted := RecordedAt(st, pod.Name); disrupted {
		return Decision{Allowed: true, Reason: "the pod's disruption was already admitted", RecordedAt: at}, true
	}
	return Decision{}, false
}

// RecordedAt is the time of pod's record in st: its disruptedPods entry,
// else its unavailablePods one; false without either.
func RecordedAt(st *policyv1alpha1.PodUnavailableBudgetStatus, pod string) (time.Time, bool) {
	if at, ok := st.DisruptedPods[pod]; ok {
		return at.Time, true
	}
	at, ok := st.UnavailablePods[pod]
	return at.Time, ok
}

// Claim makes pod's record in status, which d (a disruption free because
// of it) found, the claimer's: it moves the record's time past the time it
// had, so that a withdrawal of the record as it was (one the replica that
// made it queued when it could not tell its caller) no longer matches it.
// The record then lasts from now, or a second after its old time.
func Claim(status *policyv1alpha1.PodUnavailableBudgetStatus, pod string, d Decision, now time.Time) {
	at := metav1.NewTime(maxTime(now, d.RecordedAt.Add(time.Second)))
	for _, records := range []map[string]metav1.Time{status.DisruptedPods, status.UnavailablePods} {
		if _, ok := records[pod]; ok {
			records[pod] = at
		}
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Spent reports whether a budget with status st allows no more
// disruptions, with the refusal naming it and its numbers.
func Spent(name string, st *policyv1alpha1.PodUnavailableBudgetStatus) (Decision, bool) {
	if st.UnavailableAllowed > 0 {
		return Decision{}, false
	}
	return Decision{Reason: fmt.Sprintf("PodUnavailableBudget %s allows no more unavailable pods: %d available, %d desired, %d total",
		name, st.CurrentAvailable, st.DesiredAvailable, st.TotalReplicas)}, true
}

// AdmitInto is Admit deciding on, and recording into, status (pub's own
// status is not read): a batch of admissions decides in turn on one
// status without copying it for each. The returned Decision's Status is
// status when the disruption was recorded, nil otherwise.
func AdmitInto(pub *policyv1alpha1.PodUnavailableBudget, status *policyv1alpha1.PodUnavailableBudgetStatus, pod *corev1.Pod, op policyv1alpha1.PubOperation, now time.Time) Decision {
	st := status
	if d, free := Free(pub.Annotations, st, pod, op); free {
		return d
	}
	if d, spent := Spent(pub.Name, st); spent {
		return d
	}
	if len(st.DisruptedPods)+len(st.UnavailablePods) > MaxRecords {
		return Decision{Reason: fmt.Sprintf("PodUnavailableBudget %s has too many disruptions its controller has not confirmed yet", pub.Name)}
	}
	st.UnavailableAllowed--
	record := &st.DisruptedPods
	if op == policyv1alpha1.PubUpdateOperation {
		record = &st.UnavailablePods
	}
	if *record == nil {
		*record = map[string]metav1.Time{}
	}
	(*record)[pod.Name] = metav1.NewTime(now)
	return Decision{Allowed: true, Reason: fmt.Sprintf("admitted by PodUnavailableBudget %s", pub.Name), Status: st}
}

// UpdateOperation classifies a pod update for the budget: RESIZE for the
// pods/resize subresource (Kubernetes 1.33+ takes container resources only
// there), UPDATE for a change of the pod's spec (an image, an in-place
// update) or a new unavailable-pod.kruise.io/ label, and "" for anything
// else (labels, annotations), which takes no pod out of service.
// OpenKruise v1.9 tells a resize apart by comparing specs because it
// predates the subresource; on a current API server a resources change of
// the pod itself is refused before validating webhooks run.
func UpdateOperation(subResource string, old, updated *corev1.Pod) policyv1alpha1.PubOperation {
	if subResource == "resize" {
		if resourcesEqual(old.Spec.Containers, updated.Spec.Containers) {
			return ""
		}
		return policyv1alpha1.PubResizeOperation
	}
	if subResource != "" {
		return ""
	}
	if !equality.Semantic.DeepEqual(old.Spec, updated.Spec) {
		return policyv1alpha1.PubUpdateOperation
	}
	for k := range updated.Labels {
		if _, had := old.Labels[k]; !had && strings.HasPrefix(k, policyv1alpha1.PodUnavailableLabelPrefix) {
			return policyv1alpha1.PubUpdateOperation
		}
	}
	return ""
}

func resourcesEqual(a, b []corev1.Container) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || !equality.Semantic.DeepEqual(a[i].Resources, b[i].Resources) {
			return false
		}
	}
	return true
}

// RelatedAnnotations are the annotations that name, on a pod, the budget
// covering it, as OpenKruise writes them: pub.kruise.io/related-pub and
// its v1alpha1 spelling kruise.io/related-pub, same value. Lifeline finds
// a pod's budgets without them; tools read them, and OpenKruise guards
// only the pods that carry one, so a user going back to it finds every
// pod guarded. It returns what to add to a pod with the budget name: both
// when neither is there, the missing one (with the other's value) when
// one is, nothing when both are (whichever budget they name; a pod under
// several budgets keeps the first written, as in OpenKruise). A name that
// exists says no longer (a deleted budget) is replaced by this one: the
// annotation names a budget that covers the pod whenever one does.
func RelatedAnnotations(name string, pod *corev1.Pod, exists func(string) bool) map[string]string {
	current, deprecated := pod.Annotations[policyv1beta1.PodRelatedPubAnnotation], pod.Annotations[policyv1alpha1.PodRelatedPubAnnotation]
	stale := func(v string) bool { return v != "" && v != name && !exists(v) }
	switch {
	case stale(current) || stale(deprecated):
	case current != "" && deprecated != "":
		return nil
	case current != "":
		return map[string]string{policyv1alpha1.PodRelatedPubAnnotation: current}
	case deprecated != "":
		return map[string]string{policyv1beta1.PodRelatedPubAnnotation: deprecated}
	}
	return map[string]string{policyv1beta1.PodRelatedPubAnnotation: name, policyv1alpha1.PodRelatedPubAnnotation: name}
}

// Selects is the pods a budget's selector picks: none when it is unset,
// empty or does not parse (an empty selector guards nothing, as in
// OpenKruise v1.9, rather than every pod of the namespace).
func Selects(selector *metav1.LabelSelector) labels.Selector {
	if selector == nil {
		return labels.Nothing()
	}
	s, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil || s.Empty() {
		return labels.Nothing()
	}
	return s
}
