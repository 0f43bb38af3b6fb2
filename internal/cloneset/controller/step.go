package controller

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/cloneset/planner"
	"github.com/lifeline-k8s/lifeline/internal/phases"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
	"github.com/lifeline-k8s/lifeline/internal/workloadref"
)

// step is one reconcile of one CloneSet, the phases internal/phases runs.
type step struct {
	r *Reconciler
	c *cycle
	// status is computed from the snapshot, as OpenKruise computes it,
	// with the step's outcome; deadline is when minReadySeconds or the
	// progress deadline next changes it.
	status   appsv1alpha1.CloneSetStatus
	deadline time.Duration
	plan     *planner.Plan // nil: no step (the CloneSet is being deleted)
}

func (s *step) Revisions(ctx context.Context) error {
	if err := s.r.writeRevisions(ctx, s.c.cs, s.c.revs); err != nil {
		return err
	}
	s.r.useRevisions(s.c)
	s.status, s.deadline = planner.Status(s.c.snap, s.c.cs.Status, s.c.revs.CollisionCount, s.c.selector.String())
	return nil
}

func (s *step) Plan() ([]podlife.Action, error) {
	if s.c.cs.DeletionTimestamp != nil {
		return nil, nil
	}
	cs, snap := s.c.cs, s.c.snap
	plan, err := planner.Compute(snap)
	if err != nil {
		s.r.Recorder.Eventf(cs, nil, corev1.EventTypeWarning, "FailedPlan", "Plan", "%v", err)
		planner.SetFailure(&s.status, appsv1alpha1.CloneSetConditionFailedUpdate, err, snap.Now)
		return nil, err
	}
	if len(plan.Held) > 0 {
		s.r.Recorder.Eventf(cs, nil, corev1.EventTypeNormal, "DisruptionNotAllowed", "Disrupt", "%s", podlife.HeldMessage(plan.Held))
	}
	if plan.ScaleUpLimited {
		s.r.Recorder.Eventf(cs, nil, corev1.EventTypeWarning, "ScaleUpLimited", "Scale",
			"scaleUp is limited because of scaleStrategy.maxUnavailable, limit: %d", plan.Diffs.ScaleUpLimit)
	}
	s.plan = &plan
	return plan.Actions, nil
}

func (s *step) WriteStatus(ctx context.Context, routine bool) (time.Duration, error) {
	return phases.WriteStatus(ctx, &s.r.Shell, &s.c.cs, s.status, func(cs *appsv1alpha1.CloneSet) *appsv1alpha1.CloneSetStatus { return &cs.Status }, routine)
}

func (s *step) Execute(ctx context.Context) (time.Duration, error) {
	if s.plan == nil {
		return 0, nil
	}
	err, stale := s.r.Exec.Run(ctx, workload{cs: s.c.cs, revs: s.c.revs, r: s.r}, s.plan.Actions)
	planner.RecordOutcome(&s.status, s.plan.Phase, err, s.c.snap.Now)
	return phases.Executed(s.plan.RequeueAfter, err, stale)
}

func (s *step) Tidy(ctx context.Context) (time.Duration, error) {
	st := &s.status
	s.r.Counted(s.c.cs, map[string]int32{
		"desired": workloadref.Replicas(s.c.cs.Spec.Replicas), "current": st.Replicas, "updated": st.UpdatedReplicas, "ready": st.ReadyReplicas,
		"available": st.AvailableReplicas, "expected_updated": st.ExpectedUpdatedReplicas,
	})
	next, err := s.r.tidy(ctx, s.c)
	var pace podlife.Pace
	pace.Wake(next)
	pace.Wake(s.deadline)
	return pace.RequeueAfter, err
}
