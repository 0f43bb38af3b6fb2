package podlife

import (
	"fmt"
	"strings"

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
