package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/cloneset/planner"
	budgetadmission "github.com/lifeline-k8s/lifeline/internal/podbudget/admission"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
	"github.com/lifeline-k8s/lifeline/pkg/podpatch"
)

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
			v, err := r.Budgets.Take(ctx, budgetadmission.Request{Pod: a.Pod, Op: policyv1alpha1.PubUpdateOperation, User: budgetUser})
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
