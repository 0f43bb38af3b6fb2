package planner

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
)

func labelled(name string, labels map[string]string) *corev1.Pod {
	p := readyPod(name, oldRev)
	for k, v := range labels {
		p.Labels[k] = v
	}
	return p
}

func podOrder(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestScatterSpreadsMatchingPods(t *testing.T) {
	zone := func(name, z string) *corev1.Pod { return labelled(name, map[string]string{"zone": z}) }
	pods := []*corev1.Pod{zone("a1", "a"), zone("a2", "a"), zone("b1", "b"), zone("b2", "b"), zone("b3", "b"), zone("b4", "b")}
	SortForUpdate(pods, nil, []ScatterTerm{{Key: "zone", Value: "a"}})
	if got, want := podOrder(pods), []string{"web-b1", "web-b2", "web-a1", "web-b3", "web-b4", "web-a2"}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

func TestPriorityOrders(t *testing.T) {
	pods := []*corev1.Pod{
		labelled("none", nil),
		labelled("sts-5", map[string]string{"order": "sts-5"}),
		labelled("sts-10", map[string]string{"order": "sts-10"}),
	}
	SortForUpdate(pods, &pub.UpdatePriorityStrategy{OrderPriority: []pub.UpdatePriorityOrderTerm{{OrderedKey: "order"}}}, nil)
	// Larger trailing numbers first; pods without the key first of all, as
	// in OpenKruise.
	if got, want := podOrder(pods), []string{"web-none", "web-sts-10", "web-sts-5"}; !slices.Equal(got, want) {
		t.Errorf("order priority: %v, want %v", got, want)
	}
	pods = []*corev1.Pod{labelled("light", nil), labelled("canary", map[string]string{"canary": "true"})}
	SortForUpdate(pods, &pub.UpdatePriorityStrategy{WeightPriority: []pub.UpdatePriorityWeightTerm{{
		Weight: 50, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}}}}, nil)
	if got := podOrder(pods); got[0] != "web-canary" {
		t.Errorf("weight priority: %v", got)
	}
	held := labelled("held", nil)
	held.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStatePreparingUpdate)
	pods = []*corev1.Pod{labelled("x", nil), held}
	SortForUpdate(pods, nil, nil)
	if got := podOrder(pods); got[0] != "web-held" {
		t.Errorf("a PreparingUpdate pod is overtaken: %v", got)
	}
}
