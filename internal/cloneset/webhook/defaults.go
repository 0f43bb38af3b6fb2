// Package webhook admits CloneSets: it fills in defaults and rejects
// invalid ones with OpenKruise's messages and field paths, so a manifest that
// OpenKruise accepts is accepted here and stored with the same defaults,
// which keeps revision names, and so pods, unchanged on migration.
package webhook

import (
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1defaults "k8s.io/kubernetes/pkg/apis/core/v1"
	"k8s.io/utils/ptr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
)

// Default fills in a CloneSet's defaults. old is the stored object on an
// update, nil on a create. The pod template and volume claim templates get
// Kubernetes' own defaults on create, and on update only when the template
// changed, so that re-applying an old manifest does not change the stored
// template and start a rollout.
func Default(cs, old *appsv1alpha1.CloneSet) {
	spec := &cs.Spec
	if spec.Replicas == nil {
		spec.Replicas = ptr.To[int32](1)
	}
	if spec.RevisionHistoryLimit == nil {
		spec.RevisionHistoryLimit = ptr.To[int32](10)
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
		defaultTemplate(&spec.Template)
		for i := range spec.VolumeClaimTemplates {
			corev1defaults.SetObjectDefaults_PersistentVolumeClaim(&spec.VolumeClaimTemplates[i])
		}
	}
}

// defaultTemplate applies Kubernetes' pod defaults, except that a container
// with no imagePullPolicy gets Always whatever its tag, as OpenKruise does:
// an in-place update to a new image behind the same tag must pull it.
func defaultTemplate(t *corev1.PodTemplateSpec) {
	for i := range t.Spec.Containers {
		if t.Spec.Containers[i].ImagePullPolicy == "" {
			t.Spec.Containers[i].ImagePullPolicy = corev1.PullAlways
		}
	}
	holder := &corev1.PodTemplate{Template: *t}
	corev1defaults.SetObjectDefaults_PodTemplate(holder)
	*t = holder.Template
}
