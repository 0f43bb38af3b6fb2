package cluster

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// kwokDeletesByUID makes kwok delete pods as a kubelet does. kwok deletes
// a terminating pod by name, without the UID precondition a kubelet
// sends, so a delete it queued for a pod can remove the pod's successor of
// the same name (a StatefulSet's, a CloneSet's reusing its claims), again
// and again: an involuntary disruption no real cluster makes. A
// ValidatingAdmissionPolicy (CEL in the API server, no webhook) refuses
// kwok's deletes of pods that are not being deleted; kwok does not retry
// a refusal.
func kwokDeletesByUID(ctx context.Context, client kubernetes.Interface) error {
	const name = "kwok-deletes-only-terminating-pods"
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				}}}},
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "kwok", Expression: `request.userInfo.username == "kwok"`}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "has(oldObject.metadata.deletionTimestamp)",
				Message:    "kwok deletes only pods being deleted: this delete was meant for a predecessor of the same name",
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
	if _, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("kwok's delete policy: %w", err)
	}
	if _, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("kwok's delete policy binding: %w", err)
	}
	return nil
}
