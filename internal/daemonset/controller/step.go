package controller

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/daemonset/planner"
	"github.com/lifeline-k8s/lifeline/internal/phases"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
)

// step is one reconcile of one Advanced DaemonSet, the phases
// internal/phases runs.
type step struct {
	r      *Reconciler
	c      *cycle
	status appsv1beta1.DaemonSetStatus
	plan   planner.Plan
}

func (s *step) Revisions(ctx context.Context) error {
	if err := s.r.RevisionStore().Write(ctx, s.c.source, &s.c.revs); err != nil {
		return err
	}
	s.c.useRevisions()
	return nil
}

// Plan computes the status from the snapshot and the plan (Progressing
// says what the plan waits for); a plan that fails leaves the condition
// as a plan with nothing to do would.
func (s *step) Plan() ([]podlife.Action, error) {
	plan, err := planner.Compute(s.c.snap)
	if err == nil {
		s.plan = plan
		if len(plan.Held) > 0 {
			s.r.Recorder.Eventf(s.c.set, nil, corev1.EventTypeNormal, "DisruptionNotAllowed", "Disrupt", "%s", podlife.HeldMessage(plan.Held))
		}
		for _, a := range plan.Actions {
			if d, ok := a.(podlife.DeletePod); ok && d.Pod.Status.Phase == corev1.PodFailed {
				s.r.Recorder.Eventf(s.c.set, d.Pod, corev1.EventTypeWarning, "FailedDaemonPod", "Delete",
					"Found failed daemon pod %s/%s on node %s, will try to kill it", d.Pod.Namespace, d.Pod.Name, planner.NodeOf(d.Pod))
			}
		}
	} else {
		s.r.Recorder.Eventf(s.c.set, nil, corev1.EventTypeWarning, "FailedPlan", "Plan", "%v", err)
	}
	s.status = planner.Status(s.c.snap)
	if s.c.revs.CollisionCount > 0 || s.c.set.Status.CollisionCount != nil {
		s.status.CollisionCount = &s.c.revs.CollisionCount
	}
	s.status.Conditions = append([]appsv1.DaemonSetCondition(nil), s.c.set.Status.Conditions...)
	setProgressing(&s.status, s.plan, s.c.snap.Now)
	return s.plan.Actions, err
}

func (s *step) WriteStatus(ctx context.Context, routine bool) (time.Duration, error) {
	return phases.WriteStatus(ctx, &s.r.Shell, &s.c.set, s.status, statusOf, routine)
}

func (s *step) Execute(ctx context.Context) (time.Duration, error) {
	err, stale := s.r.Exec.Run(ctx, workload{set: s.c.set, templates: s.c.snap.Templates, now: s.c.snap.Now}, s.plan.Actions)
	return phases.Executed(s.plan.RequeueAfter, err, stale)
}

func (s *step) Tidy(ctx context.Context) (time.Duration, error) {
	s.r.Counted(s.c.set, counts(&s.status))
	return s.r.Tidy(ctx, s.c.set, &s.c.revs, s.c.snap.Pods, phases.HistoryLimit(s.c.set.Spec.RevisionHistoryLimit, 10), s.c.snap.Now)
}
