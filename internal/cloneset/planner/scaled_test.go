package planner

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// The partition vectors of OpenKruise's own tests (reference §3.2). A nil
// replicas is treated as 1 by the caller.
func TestPartitionVectors(t *testing.T) {
	for _, tc := range []struct {
		replicas  int
		partition intstr.IntOrString
		want      int
	}{
		{9, intstr.FromString("99%"), 8},
		{10, intstr.FromString("90%"), 9},
		{10, intstr.FromString("1%"), 1},
		{99, intstr.FromString("99%"), 98},
		{99, intstr.FromString("100%"), 99},
		{99, intstr.FromString("0%"), 0},
		{0, intstr.FromString("99%"), 0},
		{1, intstr.FromString("100%"), 1},
		{1, intstr.FromString("1%"), 1},
		{10, intstr.FromInt32(5), 5},
		{4, intstr.FromString("99%"), 3},
		{8, intstr.FromString("90%"), 7},
		{5, intstr.FromInt32(9), 5},          // an int above replicas clamps
		{10, intstr.FromString("100.0%"), 9}, // only the exact "100%" is exempt
		{10, intstr.FromString("12.5%"), 2},  // fractions are percents too
		{3, intstr.FromString("150%"), 2},    // over 100%: clamped, still leaving one to update
	} {
		got, err := Partition(&tc.partition, tc.replicas)
		if err != nil || got != tc.want {
			t.Errorf("Partition(%s, %d) = %d, %v; want %d", tc.partition.String(), tc.replicas, got, err, tc.want)
		}
	}
	if got, err := Partition(nil, 5); got != 0 || err != nil {
		t.Errorf("nil partition: %d %v", got, err)
	}
	if _, err := Partition(ptr.To(intstr.FromString("half")), 5); err == nil {
		t.Error("a string without % is accepted")
	}
}

func TestScaledValueRounding(t *testing.T) {
	v := intstr.FromString("20%")
	if up, _ := ScaledValue(&v, 3, true); up != 1 {
		t.Errorf("20%% of 3 rounded up = %d", up)
	}
	if down, _ := ScaledValue(&v, 3, false); down != 0 {
		t.Errorf("20%% of 3 rounded down = %d", down)
	}
	if _, err := ScaledValue(ptr.To(intstr.FromString("x%")), 3, true); err == nil {
		t.Error("x% accepted")
	}
}
