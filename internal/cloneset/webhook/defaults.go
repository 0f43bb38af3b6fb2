// Package webhook admits CloneSets: it fills in defaults and rejects
// invalid ones with OpenKruise's messages and field paths, so a manifest that
// OpenKruise accepts is accepted here and stored with the same defaults,
// which keeps revision names, and so pods, unchanged on migration.
package webhook

import (
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/workloadspec"
)

// Default fills in a CloneSet's defaults. old is the stored object on an
// update, nil on a create. The pod template and volume claim templates get
// OpenKruise's pod defaults on create, and on update only when the template
// changed, so that re-applying an old manifest does not change the stored
// template and start a rollout.
func Default(cs, old *appsv1alpha1.CloneSet) {
	spec := &cs.Spec
	if spec.Replicas == nil {
		spec.Replicas = ptr.To[int32](1)
	}
	if spec.RevisionHistoryLimit == nil {
		spec.RevisionHistoryLimit = ptr.To[int32](appsv1alpha1.DefaultCloneSetRevisionHistoryLimit)
	}
	us := &spec.UpdateStrategy
	if us.Type == "" {
		us.Type = appsv1alpha1.RecreateCloneSetUpdateStrategyType
	}
	if (us.Type == appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType || us.Type == appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType) &&
		us.InPlaceUpdateStrategy == nil {
		us.InPlaceUpdateStrategy = &pub.InPlaceUpdateStrategy{}
	}
	if us.Partition == nil {
		us.Partition = ptr.To(intstr.FromInt32(0))
	}
	if us.MaxUnavailable == nil {
		us.MaxUnavailable = ptr.To(intstr.FromString(appsv1alpha1.DefaultCloneSetMaxUnavailable))
	}
	if us.MaxSurge == nil {
		us.MaxSurge = ptr.To(intstr.FromInt32(0))
	}
	if old == nil || !apiequality.Semantic.DeepEqual(spec.Template, old.Spec.Template) {
		workloadspec.DefaultTemplates(&spec.Template, spec.VolumeClaimTemplates)
	}
}
