// Package webhook admits Advanced DaemonSets: it fills in OpenKruise's
// defaults and rejects invalid sets with OpenKruise's messages and field
// paths, every error at once, in either version. Unlike the other
// workloads, a DaemonSet's template is stored as submitted (OpenKruise does
// not default it), so its revision data is the user's own bytes.
package webhook

import (
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/conversion"
)

// DefaultBurstReplicas is burstReplicas when unset.
const DefaultBurstReplicas = 250

// Default fills in a v1beta1 set's defaults, as OpenKruise does.
func Default(ds *appsv1beta1.DaemonSet) {
	spec := &ds.Spec
	if spec.BurstReplicas == nil {
		spec.BurstReplicas = ptr.To(intstr.FromInt32(DefaultBurstReplicas))
	}
	us := &spec.UpdateStrategy
	if us.Type == "" {
		us.Type = appsv1beta1.RollingUpdateDaemonSetStrategyType
	}
	if us.Type == appsv1beta1.RollingUpdateDaemonSetStrategyType {
		if us.RollingUpdate == nil {
			us.RollingUpdate = &appsv1beta1.RollingUpdateDaemonSet{}
		}
		ru := us.RollingUpdate
		if ru.Type == "" {
			ru.Type = appsv1beta1.StandardRollingUpdateType
		}
		if ru.MaxUnavailable == nil && ru.MaxSurge == nil {
			ru.MaxUnavailable, ru.MaxSurge = ptr.To(intstr.FromInt32(1)), ptr.To(intstr.FromInt32(0))
		}
	}
	if spec.RevisionHistoryLimit == nil {
		spec.RevisionHistoryLimit = ptr.To[int32](10)
	}
}

// DefaultV1alpha1 fills in a v1alpha1 set's defaults: the deprecated
// Surging type becomes Standard with maxSurge 1 and maxUnavailable 0 where
// unset (so a Surging set still surges once stored), then the v1beta1
// defaults apply.
func DefaultV1alpha1(ds *appsv1alpha1.DaemonSet) error {
	us := &ds.Spec.UpdateStrategy
	if ru := us.RollingUpdate; ru != nil && ru.Type == appsv1alpha1.DeprecatedSurgingRollingUpdateType &&
		(us.Type == "" || us.Type == appsv1alpha1.RollingUpdateDaemonSetStrategyType) {
		if ru.MaxSurge == nil {
			ru.MaxSurge = ptr.To(intstr.FromInt32(1))
		}
		if ru.MaxUnavailable == nil {
			ru.MaxUnavailable = ptr.To(intstr.FromInt32(0))
		}
	}
	hub := &appsv1beta1.DaemonSet{}
	if err := conversion.DaemonSetToHub(ds, hub); err != nil {
		return err
	}
	Default(hub)
	back := &appsv1alpha1.DaemonSet{}
	if err := conversion.DaemonSetFromHub(hub, back); err != nil {
		return err
	}
	ds.Spec = back.Spec
	return nil
}
