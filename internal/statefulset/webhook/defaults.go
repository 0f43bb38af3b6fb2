// Package webhook admits Advanced StatefulSets: it fills in OpenKruise's
// defaults and rejects invalid sets with OpenKruise's messages and field
// paths, every error at once, so a manifest OpenKruise accepts is accepted
// here and stored with the same defaults (the template's defaults go into
// the revision name, and so into every pod).
package webhook

import (
	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/workloadspec"
)

// Options are the OpenKruise feature gates that change what the webhooks
// do, with OpenKruise's defaults in the manager's flags.
type Options struct {
	// AutoDeletePVC (StatefulSetAutoDeletePVC, on by default) defaults the
	// claim retention policy to Retain/Retain.
	AutoDeletePVC bool
	// StatefulSetAutoResizePVCGate (off by default) is not offered yet:
	// with it off, OpenKruise neither defaults volumeClaimUpdateStrategy
	// nor limits claim template changes, and neither does Lifeline.
}

// Default fills in a set's defaults, in OpenKruise's order. old is the
// stored set on an update, nil on a create: the pod template and claim
// templates get the pod defaults on create, and on update only when the
// template changed, so that re-applying a manifest does not start a
// rollout.
func Default(sts, old *appsv1beta1.StatefulSet, o Options) {
	spec := &sts.Spec
	if spec.PodManagementPolicy == "" {
		spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	us := &spec.UpdateStrategy
	if us.Type == "" {
		us.Type = appsv1.RollingUpdateStatefulSetStrategyType
	}
	if us.Type == appsv1.RollingUpdateStatefulSetStrategyType {
		if us.RollingUpdate == nil {
			us.RollingUpdate = &appsv1beta1.RollingUpdateStatefulSetStrategy{}
		}
		ru := us.RollingUpdate
		if ru.Partition == nil {
			ru.Partition = ptr.To[int32](0)
		}
		if ru.MaxUnavailable == nil {
			ru.MaxUnavailable = ptr.To(intstr.FromInt32(1))
		}
		if ru.PodUpdatePolicy == "" {
			ru.PodUpdatePolicy = appsv1beta1.RecreatePodUpdateStrategyType
		}
		if ru.MinReadySeconds == nil {
			ru.MinReadySeconds = ptr.To[int32](0)
		}
	}
	if o.AutoDeletePVC {
		if spec.PersistentVolumeClaimRetentionPolicy == nil {
			spec.PersistentVolumeClaimRetentionPolicy = &appsv1beta1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
		}
		p := spec.PersistentVolumeClaimRetentionPolicy
		if p.WhenDeleted == "" {
			p.WhenDeleted = appsv1beta1.RetainPersistentVolumeClaimRetentionPolicyType
		}
		if p.WhenScaled == "" {
			p.WhenScaled = appsv1beta1.RetainPersistentVolumeClaimRetentionPolicyType
		}
	}
	if spec.Replicas == nil {
		spec.Replicas = ptr.To[int32](1)
	}
	if spec.RevisionHistoryLimit == nil {
		spec.RevisionHistoryLimit = ptr.To[int32](10)
	}
	if old == nil || !apiequality.Semantic.DeepEqual(spec.Template, old.Spec.Template) {
		workloadspec.DefaultTemplates(&spec.Template, spec.VolumeClaimTemplates)
	}
}
