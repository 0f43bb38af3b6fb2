// Package updatesort orders the pods of an update by the workload's
// priorityStrategy, as OpenKruise does for every workload that has one.
package updatesort

import (
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
)

// ByPriority sorts pods, stably, by strategy: the sum of the weights of
// the selectors a pod matches, higher first; or the first ordered key a
// pod has, then the larger integer its value ends with. Nil leaves the
// order as it is.
func ByPriority(pods []*corev1.Pod, strategy *pub.UpdatePriorityStrategy) {
	if strategy == nil {
		return
	}
	switch {
	case len(strategy.WeightPriority) > 0:
		weight := func(p *corev1.Pod) int64 {
			var sum int64
			for _, term := range strategy.WeightPriority {
				sel, err := metav1.LabelSelectorAsSelector(&term.MatchSelector)
				if err == nil && sel.Matches(labels.Set(p.Labels)) {
					sum += int64(term.Weight)
				}
			}
			return sum
		}
		sort.SliceStable(pods, func(i, j int) bool { return weight(pods[i]) > weight(pods[j]) })
	case len(strategy.OrderPriority) > 0:
		sort.SliceStable(pods, func(i, j int) bool {
			ti, vi := orderLevel(pods[i], strategy.OrderPriority)
			tj, vj := orderLevel(pods[j], strategy.OrderPriority)
			if ti != tj {
				return ti < tj
			}
			return vi > vj
		})
	}
}

// orderLevel is the index of the first ordered key the pod has and the
// integer that ends its value. Pods with none of the keys get level -1, so,
// as in OpenKruise, they sort before pods that have one.
func orderLevel(pod *corev1.Pod, terms []pub.UpdatePriorityOrderTerm) (int, int64) {
	for i, term := range terms {
		v, ok := pod.Labels[term.OrderedKey]
		if !ok {
			continue
		}
		end := len(v)
		start := end
		for start > 0 && v[start-1] >= '0' && v[start-1] <= '9' {
			start--
		}
		n, _ := strconv.ParseInt(v[start:end], 10, 64)
		return i, n
	}
	return -1, 0
}
