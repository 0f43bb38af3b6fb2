package manager

import (
	"context"
	"flag"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	policyv1beta1 "github.com/lifeline-k8s/lifeline/api/policy/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/conversion"
	"github.com/lifeline-k8s/lifeline/internal/podadmission"
	budgetadmission "github.com/lifeline-k8s/lifeline/internal/podbudget/admission"
	budgetcontroller "github.com/lifeline-k8s/lifeline/internal/podbudget/controller"
	budgetwebhook "github.com/lifeline-k8s/lifeline/internal/podbudget/webhook"
	"github.com/lifeline-k8s/lifeline/internal/protection"
)

// PodUnavailableBudget keeps budgets' status and guards every disruption
// of the pods they cover.
func PodUnavailableBudget() *Feature {
	gates := &budgetGates{}
	return &Feature{
		Name:        "podunavailablebudget",
		AddToScheme: schemes(policyv1alpha1.AddToScheme, policyv1beta1.AddToScheme),
		Conversions: []schema.GroupKind{conversion.PodUnavailableBudget},
		Flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&gates.delete, "pub-delete-gate", true,
				"Check pod deletions and evictions against PodUnavailableBudgets (OpenKruise's PodUnavailableBudgetDeleteGate, on by default there too).")
			fs.BoolVar(&gates.update, "pub-update-gate", true,
				"Check pod updates and resizes, in-place updates of CloneSets included, against PodUnavailableBudgets (OpenKruise's PodUnavailableBudgetUpdateGate, which is off by default there).")
		},
		Controllers: func(_ context.Context, mgr ctrl.Manager, s *Shared) error {
			gates.apply(s.Budgets)
			r := &budgetcontroller.Reconciler{Client: HubClient(mgr), Recorder: s.Events.For("podunavailablebudget-controller"), ManagerNamespace: s.Namespace, Pods: s.PodScope}
			return r.SetupWithManager(mgr)
		},
		Webhooks: func(mgr ctrl.Manager, s *Shared, w Webhooks) {
			gates.apply(s.Budgets)
			budgetwebhook.Register(w.Server, w.Decoder, HubClient(mgr))
			w.Validating.Register("podunavailablebudget", s.Budgets, slices.Concat(podadmission.DisruptionTargets, podadmission.UpdateTargets)...)
		},
		MatchConditions: map[string][]podadmission.MatchCondition{
			// A pod update is sent only when it could take the pod out
			// of service (a change of its spec, a new
			// unavailable-pod.kruise.io/ label) or out of a budget's
			// protection (its labels, its controller, the no-protect
			// annotation: admission.Exit).
			"vpodupdate.lifeline.dev": {{Name: "may-disrupt", Expression: "object.spec != oldObject.spec || " +
				changed("labels") + " || " + changed("ownerReferences") + " || " +
				"(" + noProtect("object") + " && !" + noProtect("oldObject") + ")"}},
		},
		Protection: []protection.Source{{Kind: protection.Disruptions, Object: &policyv1beta1.PodUnavailableBudget{}, List: &policyv1alpha1.PodUnavailableBudgetList{}}},
		FailClosed: map[string]protection.Kind{
			"vpod.lifeline.dev": protection.Disruptions, "vpodeviction.lifeline.dev": protection.Disruptions, "vpodupdate.lifeline.dev": protection.Disruptions,
		},
	}
}

// changed is a CEL test that the update changes a pod's metadata.field.
func changed(field string) string {
	return fmt.Sprintf("has(object.metadata.%[1]s) != has(oldObject.metadata.%[1]s) || "+
		"(has(object.metadata.%[1]s) && object.metadata.%[1]s != oldObject.metadata.%[1]s)", field)
}

// noProtect is a CEL test that pod (object or oldObject) opts out of
// every budget.
func noProtect(pod string) string {
	return fmt.Sprintf("(has(%[1]s.metadata.annotations) && '%[2]s' in %[1]s.metadata.annotations && %[1]s.metadata.annotations['%[2]s'] == 'true')",
		pod, policyv1alpha1.PodPubNoProtectionAnnotation)
}

// budgetGates are the operations the budgets guard, as OpenKruise's two
// feature gates choose them.
type budgetGates struct{ delete, update bool }

func (g *budgetGates) apply(guard *budgetadmission.Guard) {
	guard.Unchecked = map[policyv1alpha1.PubOperation]bool{
		policyv1alpha1.PubDeleteOperation: !g.delete, policyv1alpha1.PubEvictOperation: !g.delete,
		policyv1alpha1.PubUpdateOperation: !g.update, policyv1alpha1.PubResizeOperation: !g.update,
	}
}
