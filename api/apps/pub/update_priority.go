package pub

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// UpdatePriorityStrategy orders the pods of an update. Only one of its two
// fields may be set.
type UpdatePriorityStrategy struct {
	// OrderPriority ranks pods by the integer at the end of a label's value,
	// taking the first term whose key the pod has.
	OrderPriority []UpdatePriorityOrderTerm `json:"orderPriority,omitempty"`
	// WeightPriority ranks pods by the sum of the weights of the terms they
	// match.
	WeightPriority []UpdatePriorityWeightTerm `json:"weightPriority,omitempty"`
}

// UpdatePriorityOrderTerm names a label whose value orders pods.
type UpdatePriorityOrderTerm struct {
	OrderedKey string `json:"orderedKey"`
}

// UpdatePriorityWeightTerm adds Weight to the priority of the pods that
// MatchSelector matches.
type UpdatePriorityWeightTerm struct {
	// Weight is in the range 1 to 100.
	Weight        int32                `json:"weight"`
	MatchSelector metav1.LabelSelector `json:"matchSelector"`
}
