package controller

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/disruption"
	budgetadmission "github.com/lifeline-k8s/lifeline/internal/podbudget/admission"
)

// disruptions is the plan's disruption check: the budgets of the
// CloneSet's namespace as read now; nil without budgets.
func (r *Reconciler) disruptions(ctx context.Context, cs *appsv1alpha1.CloneSet, now time.Time) (disruption.Check, error) {
	owner := metav1.OwnerReference{APIVersion: appsv1alpha1.GroupVersion.String(), Kind: "CloneSet", Name: cs.Name, UID: cs.UID}
	return budgetadmission.ChecksFor(ctx, r.Budgets, r.Client, cs.Namespace, owner, now)
}

// budgetUser is who the budget's events and counters name for the
// controller's in-place updates (OpenKruise names kruise-manager).
const budgetUser = "lifeline-manager"
