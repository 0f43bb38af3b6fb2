package planner

import (
	"math"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	"github.com/lifeline-k8s/lifeline/internal/updatesort"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// podDeletionCost is the annotation that ranks pods for scale-in; lower goes
// first. An invalid value counts as 0.
const podDeletionCost = "controller.kubernetes.io/pod-deletion-cost"

var phaseOrder = map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}

func maxRestarts(pod *corev1.Pod) int32 {
	var n int32
	for _, c := range pod.Status.ContainerStatuses {
		n = max(n, c.RestartCount)
	}
	return n
}

func deletionCost(pod *corev1.Pod) int64 {
	v, err := strconv.ParseInt(pod.Annotations[podDeletionCost], 10, 32)
	if err != nil {
		return 0
	}
	return v
}

// SortForScaleIn orders pods so that the ones to delete first come first:
// unscheduled, then pending, then unavailable (lifecycle hooks and
// minReadySeconds count) and not ready; then lower pod-deletion-cost; then
// pods crowded with others of the set (in the same topology domains when
// the template spreads over topology keys, on the same node otherwise);
// then the most recently ready, the most restarted and the newest.
// nodeLabels maps node names to their labels; it is needed only for spread
// constraints.
func SortForScaleIn(pods []*corev1.Pod, spread []corev1.TopologySpreadConstraint, nodeLabels map[string]map[string]string, minReadySeconds int32, now time.Time) {
	var rank map[*corev1.Pod]float64
	if len(spread) > 0 {
		rank = spreadRank(pods, spread, nodeLabels)
	} else {
		rank = sameNodeRank(pods, minReadySeconds, now)
	}
	sort.SliceStable(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if less, decided := lessByProgress(a, b); decided {
			return less
		}
		if aa, ba := podfacts.IsAvailable(a, minReadySeconds, now), podfacts.IsAvailable(b, minReadySeconds, now); aa != ba {
			return !aa
		}
		if ar, br := podfacts.HasReadyCondition(a), podfacts.HasReadyCondition(b); ar != br {
			return !ar
		}
		if ac, bc := deletionCost(a), deletionCost(b); ac != bc {
			return ac < bc
		}
		if rank[a] != rank[b] {
			return rank[a] > rank[b]
		}
		return keepOrderTail(a, b)
	})
}

// lessByProgress orders pods that got less far first: unscheduled before
// scheduled, then Pending, Unknown, Running. decided is false on a tie.
func lessByProgress(a, b *corev1.Pod) (less, decided bool) {
	if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
		return a.Spec.NodeName == "", true
	}
	if phaseOrder[a.Status.Phase] != phaseOrder[b.Status.Phase] {
		return phaseOrder[a.Status.Phase] < phaseOrder[b.Status.Phase], true
	}
	return false, false
}

// keepOrderTail breaks ties the way Kubernetes' ActivePods does: the pod
// ready for the shorter time, the more restarted, then the newer goes first.
func keepOrderTail(a, b *corev1.Pod) bool {
	if podfacts.HasReadyCondition(a) && podfacts.HasReadyCondition(b) {
		ta, tb := podfacts.ReadySince(a), podfacts.ReadySince(b)
		if !ta.Equal(tb) {
			return ta.After(tb)
		}
	}
	if ra, rb := maxRestarts(a), maxRestarts(b); ra != rb {
		return ra > rb
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return b.CreationTimestamp.Before(&a.CreationTimestamp)
	}
	return a.Name < b.Name
}

// sameNodeRank gives each pod its position among the set's pods on its node,
// best kept first: 0 for the pod a node would keep, higher for the pods
// crowding it. Scale-in prefers higher ranks, so it spreads deletions.
func sameNodeRank(pods []*corev1.Pod, minReadySeconds int32, now time.Time) map[*corev1.Pod]float64 {
	byNode := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
		}
	}
	rank := map[*corev1.Pod]float64{}
	for _, group := range byNode {
		sort.SliceStable(group, func(i, j int) bool {
			a, b := group[i], group[j]
			if aa, ba := podfacts.IsAvailable(a, minReadySeconds, now), podfacts.IsAvailable(b, minReadySeconds, now); aa != ba {
				return aa
			}
			return !keepOrderTail(a, b)
		})
		for i, p := range group {
			rank[p] = float64(i)
		}
	}
	return rank
}

// spreadRank scores each pod by how crowded its topology domains are: for
// every spread constraint's key, the number of the set's pods in the pod's
// domain, weighted by ln(domains+2) so keys with many domains count more.
// Scale-in prefers higher scores, which evens out the spread.
func spreadRank(pods []*corev1.Pod, spread []corev1.TopologySpreadConstraint, nodeLabels map[string]map[string]string) map[*corev1.Pod]float64 {
	rank := map[*corev1.Pod]float64{}
	for _, c := range spread {
		perDomain := map[string]int{}
		domainOf := map[*corev1.Pod]string{}
		for _, p := range pods {
			if v, ok := nodeLabels[p.Spec.NodeName][c.TopologyKey]; ok {
				domainOf[p] = v
				perDomain[v]++
			}
		}
		weight := math.Log(float64(len(perDomain) + 2))
		for p, d := range domainOf {
			rank[p] += weight * float64(perDomain[d])
		}
	}
	return rank
}

// SortForUpdate orders update candidates: Kubernetes' ActivePods order
// (unscheduled, pending, not ready first), then priorityStrategy, then
// scatterStrategy, then PreparingUpdate pods before all others so that a pod
// already held by its hook is not overtaken.
func SortForUpdate(pods []*corev1.Pod, strategy *pub.UpdatePriorityStrategy, scatter []ScatterTerm) {
	sort.SliceStable(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if less, decided := lessByProgress(a, b); decided {
			return less
		}
		if ar, br := podfacts.HasReadyCondition(a), podfacts.HasReadyCondition(b); ar != br {
			return !ar
		}
		return keepOrderTail(a, b)
	})
	updatesort.ByPriority(pods, strategy)
	scatterOrder(pods, scatter)
	sort.SliceStable(pods, func(i, j int) bool {
		return podfacts.State(pods[i]) == pub.LifecycleStatePreparingUpdate && podfacts.State(pods[j]) != pub.LifecycleStatePreparingUpdate
	})
}

// ScatterTerm is a label pair whose pods an update spreads out.
type ScatterTerm struct{ Key, Value string }

// scatterOrder spreads the pods carrying each scatter label pair evenly over
// the update order, so that no batch takes them all (say, every pod of one
// zone). Terms matching more pods go first. Within a term, the k-th of m
// matching pods among n goes to position round((k+1)·n/m)-1: the last one at
// the end, the others evenly before, the rest keeping their order.
func scatterOrder(pods []*corev1.Pod, terms []ScatterTerm) {
	count := func(t ScatterTerm) int {
		n := 0
		for _, p := range pods {
			if v, ok := p.Labels[t.Key]; ok && v == t.Value {
				n++
			}
		}
		return n
	}
	terms = append([]ScatterTerm(nil), terms...)
	sort.SliceStable(terms, func(i, j int) bool { return count(terms[i]) > count(terms[j]) })
	for _, t := range terms {
		var matched, rest []*corev1.Pod
		for _, p := range pods {
			if v, ok := p.Labels[t.Key]; ok && v == t.Value {
				matched = append(matched, p)
			} else {
				rest = append(rest, p)
			}
		}
		n, m := len(pods), len(matched)
		if m < 2 || len(rest) < 2 {
			continue
		}
		next := 0
		for pos := 0; pos < n; pos++ {
			if next < m && pos == (2*(next+1)*n+m)/(2*m)-1 {
				pods[pos] = matched[next]
				next++
			} else {
				pods[pos], rest = rest[0], rest[1:]
			}
		}
	}
}

// LimitUpdate picks, from sorted candidates, the ones that may be updated now:
// at most updateNum, and only while the unavailable pods stay within
// maxUnavailable. Updating a pod that is already unavailable costs no
// budget, except that pods at the target revision and unavailable count.
func LimitUpdate(candidates, all []*corev1.Pod, updateNum, maxUnavailable int, target string, minReadySeconds int32, now time.Time) []*corev1.Pod {
	if len(candidates) > updateNum {
		candidates = candidates[:updateNum]
	}
	unavailable, targetUnavailable := 0, 0
	for _, p := range all {
		if !podfacts.IsAvailable(p, minReadySeconds, now) {
			unavailable++
			if podfacts.AtRevision(p, target) {
				targetUnavailable++
			}
		}
	}
	var picked []*corev1.Pod
	for _, p := range candidates {
		if targetUnavailable+len(picked) >= maxUnavailable {
			break
		}
		if podfacts.IsAvailable(p, minReadySeconds, now) {
			if unavailable >= maxUnavailable {
				break
			}
			unavailable++
		}
		picked = append(picked, p)
	}
	return picked
}
