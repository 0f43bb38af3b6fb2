// Package podexec carries out the actions a workload's planner returns
// (internal/podlife): it renders and sends them, with expectations, and
// decides nothing the plan did not. Every workload controller uses it.
package podexec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	budgetadmission "github.com/lifeline-k8s/lifeline/internal/podbudget/admission"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
	"github.com/lifeline-k8s/lifeline/pkg/podpatch"
)

// Workload is what a plan is for, as the executor needs it: its object
// (events are about it, expectations are kept under its key), and how it
// makes the pods (and claims) a CreatePod asks for.
type Workload interface {
	Object() client.Object
	NewPod(a podlife.CreatePod) (*corev1.Pod, []*corev1.PersistentVolumeClaim, error)
}

// Executor carries out plans.
type Executor struct {
	Client client.Client
	// Live reads around the cache (a claim that already exists); Client
	// when nil.
	Live         client.Reader
	Recorder     events.EventRecorder
	Clock        clock.Clock
	Expectations *Expectations
	Metrics      Metrics
	// Budgets take the budget of an in-place update whose plan says so;
	// nil: no budgets. BudgetUser is who their events and counters name.
	Budgets    *budgetadmission.Guard
	BudgetUser string

	hookWarnings hookWarnings
}

// Execute runs the actions concurrently. Creations go in slow-start batches
// (1, 2, 4, ...) and stop at the first failing batch, so a quota or webhook
// that rejects pods costs one failed request, not hundreds. A write refused
// because its pod changed since it was planned comes back as a
// *StaleError, which is no failure: the pod is planned again.
func (e *Executor) Execute(ctx context.Context, w Workload, actions []podlife.Action) []error {
	var creates, others []podlife.Action
	for _, a := range actions {
		if _, ok := a.(podlife.CreatePod); ok {
			creates = append(creates, a)
		} else {
			others = append(others, a)
		}
	}
	var errs []error
	var mu sync.Mutex
	run := func(batch []podlife.Action) int {
		var wg sync.WaitGroup
		failed := 0
		for _, a := range batch {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := e.act(ctx, w, a); err != nil {
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

// Run executes the actions and sorts the outcome: the failures, joined
// (nil when none), and whether any write found its pod changed since it
// was planned (stale: plan again soon), which is logged, not a failure.
func (e *Executor) Run(ctx context.Context, w Workload, actions []podlife.Action) (failed error, stale bool) {
	var failures []error
	for _, err := range e.Execute(ctx, w, actions) {
		var se *StaleError
		if errors.As(err, &se) {
			stale = true
			log.FromContext(ctx).V(1).Info("pod changed since it was planned; planning again", "pod", se.Pod, "reason", se.Err.Error())
			continue
		}
		if errors.Is(err, ErrNamespaceGoing) {
			log.FromContext(ctx).V(1).Info("not creating: the namespace is going", "reason", err.Error())
			continue
		}
		failures = append(failures, err)
	}
	return errors.Join(failures...), stale
}

func (e *Executor) act(ctx context.Context, w Workload, a podlife.Action) error {
	var err error
	switch a := a.(type) {
	case podlife.CreatePod:
		err = e.create(ctx, w, a)
	case podlife.DeletePod:
		err = e.delete(ctx, w, a)
	case podlife.Writer:
		err = e.write(ctx, w, a)
	case podlife.ReleasePod:
		err = e.release(ctx, w, a)
	case podlife.AdoptPod:
		err = e.adopt(ctx, w, a)
	case podlife.HandOverClaim:
		err = e.handOver(ctx, a)
	case podlife.DeleteClaim:
		err = e.deleteClaim(ctx, a)
	default:
		err = fmt.Errorf("no executor for %s", a.Kind())
	}
	var stale *StaleError
	if err != nil && !errors.As(err, &stale) && !errors.Is(err, ErrNamespaceGoing) {
		count(e.Metrics.Failures, w, failureKind(a))
	}
	return err
}

func (e *Executor) create(ctx context.Context, w Workload, a podlife.CreatePod) error {
	pod, claims, err := w.NewPod(a)
	if err != nil {
		return err
	}
	for _, pvc := range claims {
		err := e.Client.Create(ctx, pvc)
		if apierrors.IsAlreadyExists(err) {
			err = e.claimUsable(ctx, pod.Name, pvc)
		}
		var stale *StaleError
		if errors.As(err, &stale) {
			return err
		}
		if namespaceGoing(err) {
			return fmt.Errorf("creating pvc %s: %w: %w", pvc.Name, ErrNamespaceGoing, err)
		}
		if err != nil {
			e.Recorder.Eventf(w.Object(), nil, corev1.EventTypeWarning, "FailedCreate", "Create", "failed to create pvc: %v", err)
			return fmt.Errorf("creating pvc %s: %w", pvc.Name, err)
		}
	}
	key := client.ObjectKeyFromObject(pod)
	e.Expectations.ExpectCreating(key)
	if err := e.Client.Create(ctx, pod); err != nil {
		e.Expectations.CreateFailed(key)
		if namespaceGoing(err) {
			return fmt.Errorf("creating pod %s: %w: %w", pod.Name, ErrNamespaceGoing, err)
		}
		e.Recorder.Eventf(w.Object(), nil, corev1.EventTypeWarning, "FailedCreate", "Create", "failed to create pod: %v", err)
		return fmt.Errorf("creating pod %s: %w", pod.Name, err)
	}
	e.Expectations.ExpectCreated(client.ObjectKeyFromObject(w.Object()), pod, e.Clock.Now())
	count(e.Metrics.Created, w)
	e.Recorder.Eventf(w.Object(), pod, corev1.EventTypeNormal, "SuccessfulCreate", "Create", "succeed to create pod %s (%s)", pod.Name, a.Reason)
	return nil
}

// ErrNamespaceGoing marks a create refused because the namespace is being
// deleted or is gone: no failure, as for the ReplicaSet controller (no
// Event, nothing to retry; the workload goes with its namespace). A
// workload planned at each deletion of its pods retried its creates and
// posted an Event for each refusal, refused too (e2e of 11-29: 10,500 of
// the manager's 13,400 Event writes; its requests 34,800 → 14,300 once
// neither was done).
var ErrNamespaceGoing = errors.New("the namespace is being deleted")

// namespaceGoing reports whether a create was refused because its
// namespace is terminating, or gone (a create in a namespace that does
// not exist is NotFound, naming the namespace).
func namespaceGoing(err error) bool {
	if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		return true
	}
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Kind == "namespaces"
}

// claimUsable says whether a claim that already exists under the name a
// new pod's claim takes may serve it. One still being deleted may not: a
// pod recreated under its instance id (a ReCreate update) whose claim was
// deleted with its predecessor would be created against the old claim,
// which then goes, and the pod would wait unschedulable for a claim
// nobody makes. The pod is planned again once the old claim is gone.
func (e *Executor) claimUsable(ctx context.Context, pod string, pvc *corev1.PersistentVolumeClaim) error {
	reader := e.Live
	if reader == nil {
		reader = e.Client
	}
	existing := &corev1.PersistentVolumeClaim{}
	if err := reader.Get(ctx, client.ObjectKeyFromObject(pvc), existing); err != nil {
		if apierrors.IsNotFound(err) {
			return &StaleError{Pod: pod, Err: fmt.Errorf("claim %s went while it was being created", pvc.Name)}
		}
		return err
	}
	if existing.DeletionTimestamp != nil {
		return &StaleError{Pod: pod, Err: fmt.Errorf("claim %s is still being deleted", pvc.Name)}
	}
	return nil
}

// delete deletes the pod as planned: conditional on the version the plan
// read, so that a hook label or finalizer added meanwhile (an operator
// registering the pod a moment before) stops the delete and the pod is
// planned again, through PreparingDelete. OpenKruise deletes by name,
// which lets such a pod go without its preDelete hook (seen in a chaos
// run: a pod registered 126 ms before the controller's delete).
func (e *Executor) delete(ctx context.Context, w Workload, a podlife.DeletePod) error {
	rv := a.Pod.ResourceVersion
	pre := client.Preconditions{UID: &a.Pod.UID}
	if rv != "" {
		pre.ResourceVersion = &rv
	}
	err := e.Client.Delete(ctx, a.Pod, pre)
	if apierrors.IsConflict(err) {
		count(e.Metrics.Stale, w)
		return &StaleError{Pod: a.Pod.Name, Err: err}
	}
	if err != nil && !apierrors.IsNotFound(err) {
		e.Recorder.Eventf(w.Object(), a.Pod, corev1.EventTypeWarning, "FailedDelete", "Delete", "failed to delete pod %s: %v", a.Pod.Name, err)
		return fmt.Errorf("deleting pod %s: %w", a.Pod.Name, err)
	}
	e.Expectations.ExpectDeleted(client.ObjectKeyFromObject(w.Object()), a.Pod.Name, e.Clock.Now())
	count(e.Metrics.Deleted, w)
	e.Recorder.Eventf(w.Object(), a.Pod, corev1.EventTypeNormal, "SuccessfulDelete", "Delete", "succeed to delete pod %s (%s)", a.Pod.Name, a.Reason)
	for _, pvc := range a.Claims {
		if err := e.Client.Delete(ctx, pvc, client.Preconditions{UID: &pvc.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting pvc %s: %w", pvc.Name, err)
		}
	}
	return nil
}

// release removes the workload's owner reference from the pod, guarded by
// the pod's UID.
func (e *Executor) release(ctx context.Context, w Workload, a podlife.ReleasePod) error {
	patch := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"$patch":"delete","uid":%q}],"uid":%q}}`, a.OwnerUID, a.Pod.UID)
	// Patch decodes the answer into the object it is given: a copy, as
	// a.Pod may be the cache's own.
	err := e.Client.Patch(ctx, a.Pod.DeepCopy(), client.RawPatch(types.StrategicMergePatchType, []byte(patch)))
	if err == nil {
		e.Recorder.Eventf(w.Object(), a.Pod, corev1.EventTypeNormal, "ReleasedPod", "Release", "released pod %s, which no longer matches the selector", a.Pod.Name)
	}
	return client.IgnoreNotFound(err)
}

// adopt adds the workload's controller reference to an orphaned pod,
// guarded by the pod's UID; the API server refuses a second controller,
// so a pod someone else adopted meanwhile stays theirs.
func (e *Executor) adopt(ctx context.Context, w Workload, a podlife.AdoptPod) error {
	ref, err := json.Marshal(a.Owner)
	if err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"metadata":{"ownerReferences":[%s],"uid":%q}}`, ref, a.Pod.UID)
	err = e.Client.Patch(ctx, a.Pod.DeepCopy(), client.RawPatch(types.StrategicMergePatchType, []byte(patch)))
	if err == nil {
		e.Recorder.Eventf(w.Object(), a.Pod, corev1.EventTypeNormal, "AdoptedPod", "Adopt", "adopted pod %s, which its selector matches", a.Pod.Name)
	}
	return client.IgnoreNotFound(err)
}

func (e *Executor) handOver(ctx context.Context, a podlife.HandOverClaim) error {
	handed := a.Claim.DeepCopy()
	handed.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: a.Pod.Name, UID: a.Pod.UID}}
	if err := e.Client.Patch(ctx, handed, client.MergeFrom(a.Claim)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("handing pvc %s to pod %s: %w", a.Claim.Name, a.Pod.Name, err)
	}
	return nil
}

func (e *Executor) deleteClaim(ctx context.Context, a podlife.DeleteClaim) error {
	if err := e.Client.Delete(ctx, a.Claim, client.Preconditions{UID: &a.Claim.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting pvc %s: %w", a.Claim.Name, err)
	}
	return nil
}

// write sends the action's writes in order, each rendered as a guarded
// patch; one that fails stops the rest. An in-place update takes its
// budget first when the plan says so.
func (e *Executor) write(ctx context.Context, w Workload, a podlife.Writer) error {
	pod := a.Target()
	if u, ok := a.(podlife.UpdateInPlace); ok && u.TakeBudget && e.Budgets != nil {
		v, err := e.Budgets.Take(ctx, budgetadmission.Request{Pod: pod, Op: policyv1alpha1.PubUpdateOperation, User: e.BudgetUser})
		if err != nil {
			return err
		}
		if !v.Allowed {
			e.Recorder.Eventf(w.Object(), pod, corev1.EventTypeNormal, "DisruptionNotAllowed", "Update", "%s: %s", pod.Name, v.Reason)
			return &StaleError{Pod: pod.Name, Err: fmt.Errorf("PodUnavailableBudget %s: %s", v.Refused.Name, v.Reason)}
		}
	}
	for _, write := range a.PodWrites() {
		if err := e.apply(ctx, w, write.Render(pod)); err != nil {
			var stale *StaleError
			if _, inPlace := a.(podlife.UpdateInPlace); inPlace && !errors.As(err, &stale) {
				e.Recorder.Eventf(w.Object(), pod, corev1.EventTypeWarning, "FailedUpdatePodInPlace", "Update", "failed to update pod %s in-place: %v", pod.Name, err)
			}
			return err
		}
	}
	e.recordWrite(w, a)
	return nil
}

// apply sends p to the pod, or to its status subresource when it sets
// conditions, and expects the cache to show the result.
func (e *Executor) apply(ctx context.Context, w Workload, p *podpatch.Patch) error {
	written, err := podpatch.Send(ctx, e.Client, p)
	if err != nil {
		if podpatch.IsStale(err) {
			count(e.Metrics.Stale, w)
			return &StaleError{Pod: p.Pod().Name, Err: err}
		}
		return fmt.Errorf("patching pod %s: %w", p.Pod().Name, err)
	}
	if written != nil {
		e.Expectations.ExpectChanged(client.ObjectKeyFromObject(w.Object()), p.Pod().Name, p.Pod().ResourceVersion, written.ResourceVersion, e.Clock.Now())
	}
	return nil
}

// recordWrite says, in events and metrics, what a write action did.
func (e *Executor) recordWrite(w Workload, a podlife.Writer) {
	pod := a.Target()
	switch a := a.(type) {
	case podlife.SetState:
		from := string(a.From)
		if from == "" {
			from = "(none)"
		}
		e.Recorder.Eventf(w.Object(), pod, corev1.EventTypeNormal, "LifecycleStateChanged", "SetState", "pod %s: %s → %s (%s)", pod.Name, from, a.To, a.Reason)
		if since := podfacts.StateSince(pod); !since.IsZero() && a.From != "" && e.Metrics.Durations != nil {
			e.Metrics.Durations.WithLabelValues(string(a.From)).Observe(e.Clock.Now().Sub(since).Seconds())
		}
	case podlife.UpdateNextBatch:
		e.Recorder.Eventf(w.Object(), pod, corev1.EventTypeNormal, "InPlaceUpdateNextBatch", "Update", "pod %s: next in-place batch %v (%s)", pod.Name, a.Containers, a.Reason)
	case podlife.Relabel:
		e.Recorder.Eventf(w.Object(), pod, corev1.EventTypeNormal, "RepairedPod", "Relabel", "pod %s: %s", pod.Name, a.Reason)
	case podlife.UpdateInPlace:
		e.Recorder.Eventf(w.Object(), pod, corev1.EventTypeNormal, "SuccessfulUpdatePodInPlace", "Update", "successfully update pod %s in-place(revision %s)", pod.Name, a.Revision)
	}
	for _, warning := range a.Warned() {
		e.Recorder.Eventf(w.Object(), pod, corev1.EventTypeWarning, warning.Reason, a.Kind(), "%s", warning.Message)
	}
}

// failureKind is the action label of a failed action in the failure metric.
func failureKind(a podlife.Action) string {
	switch a.(type) {
	case podlife.CreatePod:
		return "create"
	case podlife.DeletePod, podlife.DeleteClaim:
		return "delete"
	case podlife.SetState, podlife.InitPodReady, podlife.ReleasePod, podlife.AdoptPod, podlife.Relabel, podlife.HandOverClaim:
		return "patch"
	}
	return "update"
}

func count(c *prometheus.CounterVec, w Workload, extra ...string) {
	if c != nil {
		c.WithLabelValues(append([]string{w.Object().GetNamespace(), w.Object().GetName()}, extra...)...).Inc()
	}
}

// StaleError is a write refused because the pod changed since it was
// planned (or a budget refused it at the last moment). It is not a
// failure: the pod is planned again.
type StaleError struct {
	Pod string
	Err error
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("pod %s changed since it was planned: %v", e.Pod, e.Err)
}

func (e *StaleError) Unwrap() error { return e.Err }
