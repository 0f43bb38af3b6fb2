package conversion

import (
	"fmt"
	"strconv"
	"strings"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	policyv1beta1 "github.com/lifeline-k8s/lifeline/api/policy/v1beta1"
)

// PodUnavailableBudgetToHub converts a v1alpha1 budget to v1beta1, reading
// the protect-operations and protect-total-replicas annotations into their
// fields. The annotations stay in place, as in OpenKruise. A value that does
// not parse is an error, as in OpenKruise: the validating webhook refuses
// such a budget before it is stored.
func PodUnavailableBudgetToHub(src *policyv1alpha1.PodUnavailableBudget, dst *policyv1beta1.PodUnavailableBudget) error {
	in := src.DeepCopy()
	kept, err := takeStash(&in.ObjectMeta)
	if err != nil {
		return err
	}
	ops, err := parseOperations(in.Annotations[policyv1alpha1.PubProtectOperationAnnotation])
	if err != nil {
		return err
	}
	var total *int32
	if v := in.Annotations[policyv1alpha1.PubProtectTotalReplicasAnnotation]; v != "" {
		if total = parseInt32(v); total == nil {
			return fmt.Errorf("metadata.annotations[%s]: %q is not an int32", policyv1alpha1.PubProtectTotalReplicasAnnotation, v)
		}
	}
	dst.ObjectMeta = in.ObjectMeta
	dst.Spec = policyv1beta1.PodUnavailableBudgetSpec{
		Selector:             in.Spec.Selector,
		TargetReference:      (*policyv1beta1.TargetReference)(in.Spec.TargetReference),
		MaxUnavailable:       in.Spec.MaxUnavailable,
		MinAvailable:         in.Spec.MinAvailable,
		ProtectOperations:    ops,
		ProtectTotalReplicas: total,
		IgnoredPodSelector:   kept.IgnoredPodSelector,
	}
	dst.Status = policyv1beta1.PodUnavailableBudgetStatus(in.Status)
	return nil
}

// PodUnavailableBudgetFromHub converts a v1beta1 budget to v1alpha1, writing
// protectOperations and protectTotalReplicas, when set, as annotations, and
// keeping ignoredPodSelector in StashAnnotation.
func PodUnavailableBudgetFromHub(src *policyv1beta1.PodUnavailableBudget, dst *policyv1alpha1.PodUnavailableBudget) error {
	in := src.DeepCopy()
	meta := in.ObjectMeta
	// A field that is set wins; an unset one leaves the annotation as it
	// is. OpenKruise's conversion removes it, but its module's budget CRD
	// converts with strategy None, so a budget written there as v1alpha1
	// is stored with the annotations and no fields, and its controller
	// falls back to the annotations (getPubProtectOperations). Removing
	// them here would widen such a budget to every operation.
	if len(in.Spec.ProtectOperations) > 0 {
		setAnnotation(&meta, policyv1alpha1.PubProtectOperationAnnotation, joinOperations(in.Spec.ProtectOperations))
	}
	if t := in.Spec.ProtectTotalReplicas; t != nil {
		setAnnotation(&meta, policyv1alpha1.PubProtectTotalReplicasAnnotation, strconv.Itoa(int(*t)))
	}
	if err := writeStash(&meta, stash{IgnoredPodSelector: in.Spec.IgnoredPodSelector}); err != nil {
		return err
	}
	dst.ObjectMeta = meta
	dst.Spec = policyv1alpha1.PodUnavailableBudgetSpec{
		Selector:        in.Spec.Selector,
		TargetReference: (*policyv1alpha1.TargetReference)(in.Spec.TargetReference),
		MaxUnavailable:  in.Spec.MaxUnavailable,
		MinAvailable:    in.Spec.MinAvailable,
	}
	dst.Status = policyv1alpha1.PodUnavailableBudgetStatus(in.Status)
	return nil
}

// parseOperations reads "DELETE,EVICT" as OpenKruise does: items trimmed,
// empty items skipped, an unknown one an error.
func parseOperations(list string) ([]policyv1beta1.PubOperation, error) {
	var ops []policyv1beta1.PubOperation
	for _, item := range strings.Split(list, ",") {
		op := policyv1beta1.PubOperation(strings.TrimSpace(item))
		switch op {
		case "":
		case policyv1beta1.PubDeleteOperation, policyv1beta1.PubUpdateOperation, policyv1beta1.PubEvictOperation, policyv1beta1.PubResizeOperation:
			ops = append(ops, op)
		default:
			return nil, fmt.Errorf("metadata.annotations[%s]: unsupported operation %q", policyv1alpha1.PubProtectOperationAnnotation, op)
		}
	}
	return ops, nil
}

func joinOperations(ops []policyv1beta1.PubOperation) string {
	items := make([]string, 0, len(ops))
	for _, op := range ops {
		if op != "" {
			items = append(items, string(op))
		}
	}
	return strings.Join(items, ",")
}

func init() {
	register(PodUnavailableBudget, &policyv1alpha1.PodUnavailableBudget{}, &policyv1beta1.PodUnavailableBudget{}, &policyv1alpha1.PodUnavailableBudgetList{}, &policyv1beta1.PodUnavailableBudgetList{}, PodUnavailableBudgetToHub, PodUnavailableBudgetFromHub)
}
