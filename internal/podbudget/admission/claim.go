package admission

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/podbudget/budget"
)

// Records another replica made. A record answers a later disruption of
// its pod for free (OpenKruise: "already admitted"); but the replica that
// made it withdraws it when its write's outcome reached no caller, and a
// record another replica admitted a retry by in the meantime would give
// back a unit a disrupted pod holds (11-29: two replicas under an eviction
// storm admitted 7 of a budget of 5). So a process answers for free at
// once only on a record it wrote and saw land, and not withdrawing
// (isUnsettled); any other record is claimed first (budget.Claim), by a
// write conditional on the version read, which a pending withdrawal of
// the record as it was no longer matches, or which conflicts with a
// withdrawal that landed first and is decided again without the record.

// confirmedFor is how long a confirmed record is remembered: records
// expire sooner (budget.DeletionTimeout).
const confirmedFor = time.Minute

// confirm remembers the records the write of updated made for asks.
func (g *Guard) confirm(key types.NamespacedName, updated *policyv1alpha1.PodUnavailableBudget, asks []*ask, decisions []budget.Decision) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.confirmed == nil {
		g.confirmed = map[types.NamespacedName]map[string]int64{}
	}
	mine := g.confirmed[key]
	if mine == nil {
		mine = map[string]int64{}
		g.confirmed[key] = mine
	}
	for i, a := range asks {
		if decisions[i].Status == nil {
			continue
		}
		// The time budget.Free reads back, so that a pod in both maps
		// with different times is confirmed too.
		if at, ok := budget.RecordedAt(&updated.Status, a.pod.Name); ok {
			mine[a.pod.Name] = at.Unix()
		}
	}
	oldest := g.Now().Add(-confirmedFor).Unix()
	for pod, at := range mine {
		if at < oldest {
			delete(mine, pod)
		}
	}
}

// isConfirmed reports whether pod's record in budget key, made at at, is
// one this process wrote and saw land.
func (g *Guard) isConfirmed(key types.NamespacedName, pod string, at time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	sec, ok := g.confirmed[key][pod]
	return ok && sec == at.Unix()
}

func (g *Guard) unconfirm(key types.NamespacedName, pod string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.confirmed[key], pod)
}
