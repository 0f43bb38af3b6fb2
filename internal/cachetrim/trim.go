// Package cachetrim is the manager's cache transform: it drops, before an
// object enters an informer, what no controller or webhook of Lifeline
// reads, so that a cluster of many pods costs the manager less memory
// (docs/benchmark.md, Memory). Every pod write Lifeline sends is a patch of
// named fields, never an update of a whole cached pod, so nothing dropped
// here can be written back as missing.
package cachetrim

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
)

// tokenVolumePrefix names the projected volume the ServiceAccount
// admission plugin adds to every pod for its API token.
const tokenVolumePrefix = "kube-api-access-"

// Transform drops every object's managedFields and trims pods (see Pod).
func Transform(obj any) (any, error) {
	if o, err := meta.Accessor(obj); err == nil && o.GetManagedFields() != nil {
		o.SetManagedFields(nil)
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		Pod(pod)
	}
	return obj, nil
}

// Pod drops what the API server adds to every pod and Lifeline never
// reads: the service account token's projected volume with its mounts (in
// the spec and in the kubelet's container statuses), and the default
// not-ready and unreachable tolerations.
func Pod(pod *corev1.Pod) {
	tokens := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		if v.Projected != nil && strings.HasPrefix(v.Name, tokenVolumePrefix) {
			tokens[v.Name] = true
		}
	}
	isToken := func(name string) bool { return tokens[name] }
	pod.Spec.Volumes = without(pod.Spec.Volumes, func(v corev1.Volume) bool { return isToken(v.Name) })
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			cs[i].VolumeMounts = without(cs[i].VolumeMounts, func(m corev1.VolumeMount) bool { return isToken(m.Name) })
		}
	}
	for _, ss := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for i := range ss {
			ss[i].VolumeMounts = without(ss[i].VolumeMounts, func(m corev1.VolumeMountStatus) bool { return isToken(m.Name) })
		}
	}
	pod.Spec.Tolerations = without(pod.Spec.Tolerations, isDefaultToleration)
}

// without returns s without the elements drop picks, in a new array of
// just the right size: slices.DeleteFunc would keep the old array, and its
// bytes, alive.
func without[T any](s []T, drop func(T) bool) []T {
	dropped := 0
	for _, x := range s {
		if drop(x) {
			dropped++
		}
	}
	if dropped == 0 {
		return s
	}
	if dropped == len(s) {
		return nil
	}
	kept := make([]T, 0, len(s)-dropped)
	for _, x := range s {
		if !drop(x) {
			kept = append(kept, x)
		}
	}
	return kept
}

// isDefaultToleration says whether t is one the DefaultTolerationSeconds
// admission plugin adds.
func isDefaultToleration(t corev1.Toleration) bool {
	return (t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable) &&
		t.Operator == corev1.TolerationOpExists && t.Effect == corev1.TaintEffectNoExecute && t.Value == ""
}
