package webhook

import (
	"context"
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/podadmission"
	"github.com/lifeline-k8s/lifeline/internal/podbudget/admission"
	"github.com/lifeline-k8s/lifeline/internal/podbudget/workload"
)

// Warnings says what a valid budget should know at creation: that the pod
// webhooks never see its namespace, so it protects nothing; and which
// other budgets cover some of the same pods (a disruption must then be
// admitted by each, so the strictest wins). Covering pods are judged by
// the admission's own rule (admission.Covering) over the pods of the
// namespace (reader resolves their workloads); selectors that could match
// one pod together are named even before any such pod exists.
func Warnings(ctx context.Context, reader client.Reader, pub *policyv1alpha1.PodUnavailableBudget, others []policyv1alpha1.PodUnavailableBudget, pods []corev1.Pod) []string {
	var out []string
	if slices.Contains(podadmission.SystemNamespaces, pub.Namespace) {
		out = append(out, fmt.Sprintf("namespace %s is left out of Lifeline's pod webhooks: this PodUnavailableBudget protects nothing there", pub.Namespace))
	}
	overlapping := map[string]bool{}
	for i := range others {
		o := &others[i]
		if o.Name != pub.Name && pub.Spec.Selector != nil && o.Spec.Selector != nil && mayMatchTogether(pub.Spec.Selector, o.Spec.Selector) {
			overlapping[o.Name] = true
		}
	}
	all := append(slices.Clone(others), *pub)
	for i := range pods {
		pod := &pods[i]
		var owner *metav1.OwnerReference
		if ref := metav1.GetControllerOf(pod); ref != nil {
			if top, err := workload.Top(ctx, reader, pod.Namespace, *ref); err == nil {
				owner = &top
			}
		}
		covering := admission.Covering(all, owner, pod.Labels)
		if !slices.ContainsFunc(covering, func(b *policyv1alpha1.PodUnavailableBudget) bool { return b.Name == pub.Name }) {
			continue
		}
		for _, b := range covering {
			if b.Name != pub.Name {
				overlapping[b.Name] = true
			}
		}
	}
	names := make([]string, 0, len(overlapping))
	for name := range overlapping {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		out = append(out, fmt.Sprintf("PodUnavailableBudget %s covers some of the same pods: a disruption of one of them must be admitted by both", name))
	}
	return out
}

// mayMatchTogether reports whether some set of labels matches both
// selectors: every key they both constrain has requirements that can
// hold at once (keys only one constrains are free).
func mayMatchTogether(a, b *metav1.LabelSelector) bool {
	ra, rb := requirements(a), requirements(b)
	for k, x := range ra {
		if y, ok := rb[k]; ok && !compatible(x, y) {
			return false
		}
	}
	return true
}
