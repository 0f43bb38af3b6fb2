package controller

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/phases"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
	"github.com/lifeline-k8s/lifeline/internal/statefulset/planner"
)

// step is one reconcile of one Advanced StatefulSet, the phases
// internal/phases runs.
type step struct {
	r      *Reconciler
	c      *cycle
	status appsv1beta1.StatefulSetStatus
	plan   planner.Plan
}

func (s *step) Revisions(ctx context.Context) error {
	if err := s.r.RevisionStore().Write(ctx, s.c.source, &s.c.revs); err != nil {
		return err
	}
	s.c.useRevisions()
	return nil
}

// Plan computes the status counting the pods the step will create
// (Pending, at their revisions), as OpenKruise and Kubernetes count them
// once made: counting them here saves a second status write per created
// pod once the cache shows it.
func (s *step) Plan() ([]podlife.Action, error) {
	now := s.c.snap.Now
	plan, err := planner.Compute(s.c.snap)
	snap := s.c.snap
	if err == nil {
		snap = snap.WithCreated(plan.Actions)
	}
	s.status = planner.Status(snap, &s.c.revs.CollisionCount, s.c.selector)
	s.status.Conditions = append([]appsv1.StatefulSetCondition(nil), s.c.set.Status.Conditions...)
	if err != nil {
		s.r.Recorder.Eventf(s.c.set, nil, corev1.EventTypeWarning, "FailedPlan", "Plan", "%v", err)
		setCondition(&s.status, appsv1beta1.FailedUpdatePod, corev1.ConditionTrue, "FailedPlan", err.Error(), now)
		return nil, err
	}
	if len(plan.Held) > 0 {
		s.r.Recorder.Eventf(s.c.set, nil, corev1.EventTypeNormal, "DisruptionNotAllowed", "Disrupt", "%s", podlife.HeldMessage(plan.Held))
	}
	setProgressing(&s.status, s.c.set, plan, now)
	s.plan = plan
	return plan.Actions, nil
}

func (s *step) WriteStatus(ctx context.Context, routine bool) (time.Duration, error) {
	return phases.WriteStatus(ctx, &s.r.Shell, &s.c.set, s.status, statusOf, routine)
}

// Execute records a failure in FailedCreatePod (scaling) or
// FailedUpdatePod, and clears it once a step's actions all succeed.
func (s *step) Execute(ctx context.Context) (time.Duration, error) {
	now := s.c.snap.Now
	err, stale := s.r.Exec.Run(ctx, workload{set: s.c.set, revs: &s.c.revs, templates: s.c.snap.Templates, now: now}, s.plan.Actions)
	failed := appsv1beta1.FailedUpdatePod
	if s.plan.Phase == planner.PhaseScale {
		failed = appsv1beta1.FailedCreatePod
	}
	switch {
	case err != nil:
		setCondition(&s.status, failed, corev1.ConditionTrue, "Failed"+string(s.plan.Phase), err.Error(), now)
	case len(s.plan.Actions) > 0:
		removeCondition(&s.status, failed)
	}
	return phases.Executed(s.plan.RequeueAfter, err, stale)
}

func (s *step) Tidy(ctx context.Context) (time.Duration, error) {
	s.r.Counted(s.c.set, counts(s.c.set, &s.status))
	return s.r.Tidy(ctx, s.c.set, &s.c.revs, s.c.snap.Pods, phases.HistoryLimit(s.c.set.Spec.RevisionHistoryLimit, 10), s.c.snap.Now)
}
