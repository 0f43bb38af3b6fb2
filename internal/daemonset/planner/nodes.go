package planner

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	daemonutil "k8s.io/kubernetes/pkg/controller/daemon/util"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
)

// Placement is what a node says about a set's pod, as the native
// DaemonSet decides it: ShouldRun, the node should run one (its name,
// node selector, required affinity and taints allow it); ShouldContinue,
// a pod already there may stay (only NoSchedule taints stand in the way).
type Placement struct {
	ShouldRun, ShouldContinue bool
}

// PlacementOn decides the set's placement on node. Resources are not
// considered, as the native DaemonSet does not consider them; taint
// tolerations compare as before TaintTolerationComparisonOperators (off
// by default).
func PlacementOn(set *appsv1beta1.DaemonSet, node *corev1.Node) Placement {
	return placementOn(CandidateSpec(set), node)
}

// placementOn is PlacementOn for the set's candidate spec, made once for
// every node.
func placementOn(spec *corev1.PodSpec, node *corev1.Node) Placement {
	if spec.NodeName != "" && spec.NodeName != node.Name {
		return Placement{}
	}
	pod := &corev1.Pod{Spec: *spec}
	if fits, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); err != nil || !fits {
		return Placement{}
	}
	_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoExecute || t.Effect == corev1.TaintEffectNoSchedule
	}, false)
	if !untolerated {
		return Placement{ShouldRun: true, ShouldContinue: true}
	}
	_, evicts := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoExecute
	}, false)
	return Placement{ShouldContinue: !evicts}
}

// CandidateSpec is the pod spec the set's pods get before their node is
// chosen: the template's, with the tolerations every daemon pod has
// (not-ready and unreachable nodes, pressure, unschedulable).
func CandidateSpec(set *appsv1beta1.DaemonSet) *corev1.PodSpec {
	spec := set.Spec.Template.Spec.DeepCopy()
	daemonutil.AddOrUpdateDaemonPodTolerations(spec)
	return spec
}

// NodeOf is the node a pod of the set is on or meant for: its nodeName,
// or before it is scheduled the node its node-name affinity term names.
func NodeOf(pod *corev1.Pod) string {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName
	}
	name, _ := daemonutil.GetTargetNodeName(pod)
	return name
}

// byAge sorts a node's pods oldest first, as the native DaemonSet ranks
// them: scheduled before unscheduled, then by creation, then by name.
func byAge(pods []*corev1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if (a.Spec.NodeName != "") != (b.Spec.NodeName != "") {
			return a.Spec.NodeName != ""
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
}
