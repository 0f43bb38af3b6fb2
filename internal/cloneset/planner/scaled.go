package planner

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// ScaledValue resolves an int-or-percent against total, rounding a percent up
// or down.
//
// OpenKruise parses percents two ways: its validation (and partition) accept
// fractions such as "12.5%", while its controller resolves maxUnavailable and
// maxSurge with Kubernetes' intstr, which rejects them, so a CloneSet that
// passed validation fails in the controller. We fix that: fractions are
// accepted everywhere.
func ScaledValue(v *intstr.IntOrString, total int, roundUp bool) (int, error) {
	if v == nil {
		return 0, fmt.Errorf("nil value for IntOrString")
	}
	if v.Type == intstr.Int {
		return v.IntValue(), nil
	}
	s := v.StrVal
	if !strings.HasSuffix(s, "%") {
		return 0, fmt.Errorf("invalid type: string is not a percentage")
	}
	percent, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil {
		return 0, fmt.Errorf("invalid value for IntOrString: invalid value %q: %v", s, err)
	}
	scaled := percent * float64(total) / 100
	if roundUp {
		return int(math.Ceil(scaled)), nil
	}
	return int(math.Floor(scaled)), nil
}

// Partition is the number of pods that stay at the current revision:
// spec.updateStrategy.partition resolved against replicas with OpenKruise's
// v1.2 rule. A percent is rounded up, but a percent other than exactly
// "100%" leaves at least one pod to update when replicas > 1. The result is
// clamped to [0, replicas].
func Partition(partition *intstr.IntOrString, replicas int) (int, error) {
	if partition == nil {
		return 0, nil
	}
	p, err := ScaledValue(partition, replicas, true)
	if err != nil {
		return 0, err
	}
	if replicas > 1 && p >= replicas && partition.Type == intstr.String && partition.StrVal != "100%" {
		p = replicas - 1
	}
	return max(min(p, replicas), 0), nil
}
