package updatesort

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
)

func pods(labels ...map[string]string) []*corev1.Pod {
	out := make([]*corev1.Pod, len(labels))
	for i, l := range labels {
		out[i] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: string(rune('a' + i)), Labels: l}}
	}
	return out
}

func names(ps []*corev1.Pod) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name
	}
	return out
}

// The orders of OpenKruise's priorityStrategy (reference: cloneset.md,
// "priorityStrategy"): weights summed, higher first; ordered keys by the
// first key present, then the larger trailing integer, pods with no key
// first; ties keep the order they came in.
func TestByPriority(t *testing.T) {
	weights := &pub.UpdatePriorityStrategy{WeightPriority: []pub.UpdatePriorityWeightTerm{
		{Weight: 50, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"zone": "a"}}},
		{Weight: 30, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}},
	}}
	order := &pub.UpdatePriorityStrategy{OrderPriority: []pub.UpdatePriorityOrderTerm{{OrderedKey: "first"}, {OrderedKey: "second"}}}
	cases := []struct {
		name     string
		pods     []*corev1.Pod
		strategy *pub.UpdatePriorityStrategy
		want     []string
	}{
		{"no strategy: as they came", pods(map[string]string{"zone": "a"}, nil), nil, []string{"a", "b"}},
		{"weights add up, higher first, ties stable",
			pods(nil, map[string]string{"tier": "web"}, map[string]string{"zone": "a"}, map[string]string{"zone": "a", "tier": "web"}, nil),
			weights, []string{"d", "c", "b", "a", "e"}},
		{"first key present wins, then the larger trailing integer",
			pods(map[string]string{"second": "9"}, map[string]string{"first": "sts-5"}, map[string]string{"first": "sts-10"}, map[string]string{"second": "x"}),
			order, []string{"c", "b", "a", "d"}},
		{"pods with none of the keys first", pods(map[string]string{"first": "1"}, nil, map[string]string{"other": "9"}),
			order, []string{"b", "c", "a"}},
		{"no trailing digits count as 0", pods(map[string]string{"first": "x"}, map[string]string{"first": "x1"}),
			order, []string{"b", "a"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ByPriority(c.pods, c.strategy)
			if got := names(c.pods); !slices.Equal(got, c.want) {
				t.Errorf("order %v, want %v", got, c.want)
			}
		})
	}
}
