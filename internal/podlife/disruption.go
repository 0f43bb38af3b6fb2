package podlife

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lifeline-k8s/lifeline/internal/disruption"
)

// Held is a pod whose disruption the check refused, and why.
type Held struct {
	Pod    *corev1.Pod
	Reason string
}

// Allowed keeps the actions the disruption check (PodUnavailableBudget)
// allows now and returns the pods of the others as held: every action that
// would take its pod out of service (a Disrupter) is asked first. A nil
// check allows everything.
func Allowed(check disruption.Check, actions []Action) (kept []Action, held []Held) {
	if check == nil {
		return actions, nil
	}
	kept = actions[:0:0]
	for _, a := range actions {
		if d, ok := a.(Disrupter); ok && d.Disrupts() != "" {
			if ok, reason := check.Allow(a.Target(), d.Disrupts()); !ok {
				held = append(held, Held{Pod: a.Target(), Reason: reason})
				continue
			}
		}
		kept = append(kept, a)
	}
	return kept, held
}

// HeldMessage says which pods wait for a disruption budget, and why.
func HeldMessage(held []Held) string {
	parts := make([]string, 0, len(held))
	for _, h := range held {
		parts = append(parts, fmt.Sprintf("%s: %s", h.Pod.Name, h.Reason))
	}
	return "waiting to disrupt pods the budget does not allow now: " + strings.Join(parts, "; ")
}

// Pace is what a plan says besides its actions: when to look again, the
// pods the disruption check held back, and why the rollout waits. Every
// workload's plan embeds it.
type Pace struct {
	// RequeueAfter asks for another look after this long even if nothing
	// changes (minReadySeconds, a grace period, a held pod).
	RequeueAfter time.Duration
	// Held are pods the plan would have deleted or updated in place but
	// the disruption check did not allow now.
	Held []Held
	// Waiting says why the rollout does not move, "" when it does or is
	// done: for the Progressing condition and `kubectl describe`.
	Waiting string
	// Blocked names, when the wait is for someone else (a hook's
	// operator, a budget, a user who paused the rollout), why:
	// HookWaiting, DisruptionNotAllowed, Paused, Partitioned. "" for the
	// waits a rollout paces itself with (pods starting, maxUnavailable in
	// use), which say nothing wrong.
	Blocked string
}

// HeldRetry is when a plan with held pods looks again: a budget frees up
// without any event on the workload.
const HeldRetry = 5 * time.Second

// Wake asks for another look within d.
func (p *Pace) Wake(d time.Duration) {
	if d > 0 && (p.RequeueAfter == 0 || d < p.RequeueAfter) {
		p.RequeueAfter = d
	}
}

// Allow drops the actions that would take a pod out of service when check
// does not allow it now, recording them as held.
func (p *Pace) Allow(check disruption.Check, actions []Action) []Action {
	kept, held := Allowed(check, actions)
	p.Held = append(p.Held, held...)
	if len(held) > 0 {
		p.Wake(HeldRetry)
		if p.Waiting == "" {
			p.Waiting, p.Blocked = HeldMessage(held), "DisruptionNotAllowed"
		}
	}
	return kept
}
