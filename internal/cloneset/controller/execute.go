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

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	budgetadmission "github.com/lifeline-k8s/lifeline/internal/podbudget/admission"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
	"github.com/lifeline-k8s/lifeline/pkg/podpatch"
)

// execute runs the plan's actions concurrently. Creations go in slow-start
// batches (1, 2, 4, ...) and stop at the first failing batch, so a quota or
// webhook that rejects pods costs one failed request, not hundreds.
func (r *Reconciler) execute(ctx context.Context, cs *appsv1alpha1.CloneSet, revs *revisions, actions []podlife.Action) []error {
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

// act carries out one action; it decides nothing the plan did not.
func (r *Reconciler) act(ctx context.Context, cs *appsv1alpha1.CloneSet, revs *revisions, a podlife.Action) error {
	var err error
	switch a := a.(type) {
	case podlife.CreatePod:
		err = r.create(ctx, cs, revs, a)
	case podlife.DeletePod:
		err = r.delete(ctx, cs, a)
	case podlife.Writer:
		err = r.write(ctx, cs, a)
	default:
		err = fmt.Errorf("no executor for %s", a.Kind())
	}
	var stale *staleError
	if err != nil && !errors.As(err, &stale) {
		actionFailures.WithLabelValues(cs.Namespace, cs.Name, failureKind(a)).Inc()
	}
	return err
}

func (r *Reconciler) create(ctx context.Context, cs *appsv1alpha1.CloneSet, revs *revisions, a podlife.CreatePod) error {
	now := r.Clock.Now()
	cr := revs.update
	if a.Revision == revs.current.Name {
		cr = revs.current
	}
	pod, err := newPod(cs, cr, a.InstanceID, a.State, now)
	if err != nil {
		return err
	}
	for _, pvc := range newPVCs(cs, a.InstanceID) {
		if err := r.Create(ctx, pvc); err != nil && !apierrors.IsAlreadyExists(err) {
			r.Recorder.Eventf(cs, nil, corev1.EventTypeWarning, "FailedCreate", "Create", "failed to create pvc: %v", err)
			return fmt.Errorf("creating pvc %s: %w", pvc.Name, err)
		}
	}
	if err := r.Create(ctx, pod); err != nil {
		r.Recorder.Eventf(cs, nil, corev1.EventTypeWarning, "FailedCreate", "Create", "failed to create pod: %v", err)
		return fmt.Errorf("creating pod %s: %w", pod.Name, err)
	}
	r.expectations.ExpectCreated(client.ObjectKeyFromObject(cs), pod.Name, pod.UID, now)
	podsCreated.WithLabelValues(cs.Namespace, cs.Name).Inc()
	r.Recorder.Eventf(cs, pod, corev1.EventTypeNormal, "SuccessfulCreate", "Create", "succeed to create pod %s (%s)", pod.Name, a.Reason)
	return nil
}

func (r *Reconciler) delete(ctx context.Context, cs *appsv1alpha1.CloneSet, a podlife.DeletePod) error {
	err := r.Delete(ctx, a.Pod, client.Preconditions{UID: &a.Pod.UID})
	if err != nil && !apierrors.IsNotFound(err) {
		r.Recorder.Eventf(cs, a.Pod, corev1.EventTypeWarning, "FailedDelete", "Delete", "failed to delete pod %s: %v", a.Pod.Name, err)
		return fmt.Errorf("deleting pod %s: %w", a.Pod.Name, err)
	}
	r.expectations.ExpectDeleted(client.ObjectKeyFromObject(cs), a.Pod.Name, r.Clock.Now())
	podsDeleted.WithLabelValues(cs.Namespace, cs.Name).Inc()
	r.Recorder.Eventf(cs, a.Pod, corev1.EventTypeNormal, "SuccessfulDelete", "Delete", "succeed to delete pod %s (%s)", a.Pod.Name, a.Reason)
	for _, pvc := range a.Claims {
		if err := r.Delete(ctx, pvc, client.Preconditions{UID: &pvc.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting pvc %s: %w", pvc.Name, err)
		}
	}
	return nil
}

// write sends the action's writes in order, each rendered as a guarded
// patch; one that fails stops the rest. An in-place update takes its
// budget first when the plan says so.
func (r *Reconciler) write(ctx context.Context, cs *appsv1alpha1.CloneSet, a podlife.Writer) error {
	pod := a.Target()
	if u, ok := a.(podlife.UpdateInPlace); ok && u.TakeBudget && r.Budgets != nil {
		v, err := r.Budgets.Take(ctx, budgetadmission.Request{Pod: pod, Op: policyv1alpha1.PubUpdateOperation, User: budgetUser})
		if err != nil {
			return err
		}
		if !v.Allowed {
			r.Recorder.Eventf(cs, pod, corev1.EventTypeWarning, "DisruptionNotAllowed", "Update", "%s: %s", pod.Name, v.Reason)
			return &staleError{pod: pod.Name, err: fmt.Errorf("PodUnavailableBudget %s: %s", v.Refused.Name, v.Reason)}
		}
	}
	for _, w := range a.PodWrites() {
		if err := r.applyPatch(ctx, client.ObjectKeyFromObject(cs), w.Render(pod)); err != nil {
			var stale *staleError
			if _, inPlace := a.(podlife.UpdateInPlace); inPlace && !errors.As(err, &stale) {
				r.Recorder.Eventf(cs, pod, corev1.EventTypeWarning, "FailedUpdatePodInPlace", "Update", "failed to update pod %s in-place: %v", pod.Name, err)
			}
			return err
		}
	}
	r.recordWrite(cs, a)
	return nil
}

// staleRetry is when a CloneSet whose pod changed under a write is planned
// again at the latest.
const staleRetry = time.Second

func stateOrNone(s pub.LifecycleStateType) string {
	if s != "" {
		return string(s)
	}
	return "(none)"
}

// failureKind is the action label of a failed action in the failure metric.
func failureKind(a podlife.Action) string {
	switch a.(type) {
	case podlife.CreatePod:
		return "create"
	case podlife.DeletePod:
		return "delete"
	case podlife.SetState, podlife.InitPodReady:
		return "patch"
	}
	return "update"
}

// recordWrite says, in events and metrics, what a write action did.
func (r *Reconciler) recordWrite(cs *appsv1alpha1.CloneSet, a podlife.Writer) {
	pod := a.Target()
	switch a := a.(type) {
	case podlife.SetState:
		r.Recorder.Eventf(cs, pod, corev1.EventTypeNormal, "LifecycleStateChanged", "SetState",
			"pod %s: %s → %s (%s)", pod.Name, stateOrNone(a.From), a.To, a.Reason)
		if since := podfacts.StateSince(pod); !since.IsZero() && a.From != "" {
			stateDuration.WithLabelValues(string(a.From)).Observe(r.Clock.Now().Sub(since).Seconds())
		}
	case podlife.UpdateNextBatch:
		r.Recorder.Eventf(cs, pod, corev1.EventTypeNormal, "InPlaceUpdateNextBatch", "Update",
			"pod %s: next in-place batch %v (%s)", pod.Name, a.Containers, a.Reason)
	case podlife.UpdateInPlace:
		r.Recorder.Eventf(cs, pod, corev1.EventTypeNormal, "SuccessfulUpdatePodInPlace", "Update",
			"successfully update pod %s in-place(revision %s)", pod.Name, a.Revision)
	}
	for _, w := range a.Warned() {
		r.Recorder.Eventf(cs, pod, corev1.EventTypeWarning, w.Reason, a.Kind(), "%s", w.Message)
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
