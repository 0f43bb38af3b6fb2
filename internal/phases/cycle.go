// Package phases is the one reconcile skeleton every workload controller
// fills in (CloneSet, Advanced StatefulSet, Advanced DaemonSet). Its Shell
// is what each controller is made of (clients, executor, expectations,
// metrics, the watches every kind has) and reads the head of each
// snapshot: the workload and its pods once the cache shows the
// controller's own writes. Run then writes the planned revisions, plans
// the step, executes it, writes the status (before the step's pod writes
// too when the step moves a pod's lifecycle state: why is said at Run),
// tidies up, and merges every phase's wish to look again into one result.
// A controller keeps only what is its own: the rest of its snapshot, the
// planner, the status it computes and the adapter the executor writes
// through.
package phases

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/lifeline-k8s/lifeline/internal/podlife"
)

// Cycle is one reconcile of one workload, its snapshot read: the phases
// its kind fills in. Each phase keeps what it produced for the next.
type Cycle interface {
	// Revisions writes the revisions the snapshot planned and adopts them
	// for the phases that follow.
	Revisions(ctx context.Context) error
	// Plan plans the step, pure, and computes the status from the
	// snapshot and the plan; it returns the step's actions. A plan that
	// fails fails the step: the kind records why in the status, and
	// nothing is executed.
	Plan() ([]podlife.Action, error)
	// WriteStatus writes the status when it differs from the stored one;
	// routine, a change of counts alone may wait (WriteStatus in shell.go),
	// and it says for how long.
	WriteStatus(ctx context.Context, routine bool) (time.Duration, error)
	// Execute carries the plan out, recording its outcome in the status,
	// and says when to look again.
	Execute(ctx context.Context) (time.Duration, error)
	// Tidy runs once the status is written (revision history, metrics,
	// hook-wait warnings) and says when to look again.
	Tidy(ctx context.Context) (time.Duration, error)
}

// Run runs c's phases in order and merges their results.
//
// When the step moves a pod to another lifecycle state, the status is
// written before the step's pod writes, and again after only if the step
// changed it (a failure condition, a condition it cleared): a reader that
// sees a pod in the state the step gave it then always sees the status of
// that step, as OpenKruise's own e2e specs read it (a CloneSet scaled down
// under a preDelete hook reads replicas 3 and Progressing the moment its
// pod shows PreparingDelete; TestScaleDownHeldByPreDeleteIsProgressing
// read the older status in 5 of 15 runs when the status came after). A
// status write that conflicts keeps the step from running on a workload
// that changed: the change brings it back. Any other step writes the
// status once, after its pod writes: before them it would sit on the
// critical path of every one-at-a-time step (an OrderedReady rolling
// update of 1,000 pods took 91 s instead of 69).
func Run(ctx context.Context, c Cycle) (ctrl.Result, error) {
	if err := c.Revisions(ctx); err != nil {
		return ctrl.Result{}, err
	}
	actions, planErr := c.Plan()
	if podlife.ChangesStates(actions) || planErr != nil {
		if _, err := c.WriteStatus(ctx, false); err != nil {
			if apierrors.IsConflict(err) {
				return ctrl.Result{Requeue: true}, planErr
			}
			return ctrl.Result{}, errors.Join(planErr, err)
		}
	}
	var pace podlife.Pace
	stepErr := planErr
	if planErr == nil {
		after, err := c.Execute(ctx)
		pace.Wake(after)
		stepErr = err
		wait, err := c.WriteStatus(ctx, true)
		pace.Wake(wait)
		if err != nil {
			if apierrors.IsConflict(err) {
				return ctrl.Result{Requeue: true}, stepErr
			}
			return ctrl.Result{}, errors.Join(stepErr, err)
		}
	}
	next, err := c.Tidy(ctx)
	if err != nil {
		return ctrl.Result{}, errors.Join(stepErr, err)
	}
	pace.Wake(next)
	return ctrl.Result{RequeueAfter: pace.RequeueAfter}, stepErr
}
