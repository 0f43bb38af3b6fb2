package controller

import (
	"time"

	"github.com/lifeline-k8s/lifeline/pkg/podfacts"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/cloneset/planner"
	"github.com/lifeline-k8s/lifeline/internal/revision"
	"github.com/lifeline-k8s/lifeline/internal/workloadspec"
)

var cloneSetKind = revision.CloneSetOwnerKind

// templateOf reads the pod template stored in a ControllerRevision.
var templateOf = revision.TemplateOf

// pvcName is the name of an instance's claim from a volumeClaimTemplate.
func pvcName(vct, cloneSet, id string) string { return vct + "-" + cloneSet + "-" + id }

// newPod builds the pod of instance id at a revision: the revision's
// template, named <cloneset>-<id>, owned by the CloneSet, labelled with its
// instance id, revision and initial lifecycle state, with one volume per
// volumeClaimTemplate pointing at the instance's claim.
func newPod(cs *appsv1alpha1.CloneSet, cr *appsv1.ControllerRevision, id string, state pub.LifecycleStateType, now time.Time) (*corev1.Pod, error) {
	tmpl, err := templateOf(cr)
	if err != nil {
		return nil, err
	}
	var gates []corev1.PodConditionType
	if planner.UpdatesInPlace(cs) {
		gates = append(gates, pub.InPlaceUpdateReady)
	}
	if planner.MarksPodNotReady(cs) {
		gates = append(gates, pub.KruisePodReadyConditionType)
	}
	pod := workloadspec.NewPod{Owner: cs, Kind: cloneSetKind, Name: cs.Name + "-" + id, GenerateName: cs.Name + "-",
		State: state, Now: now, Gates: gates, Labels: map[string]string{
			appsv1alpha1.CloneSetInstanceID: id, appsv1.ControllerRevisionHashLabelKey: cr.Name,
			appsv1.DefaultDeploymentUniqueLabelKey: podfacts.ShortHash(cr.Name),
		}}.Build(tmpl)
	pod.Spec.Volumes = workloadspec.ClaimVolumes(pod.Spec.Volumes, cs.Spec.VolumeClaimTemplates,
		func(vct string) string { return pvcName(vct, cs.Name, id) })
	return pod, nil
}

// newPVCs builds the claims of instance id from the volumeClaimTemplates.
func newPVCs(cs *appsv1alpha1.CloneSet, id string) []*corev1.PersistentVolumeClaim {
	return workloadspec.NewClaims(cs.Namespace, cs.Spec.VolumeClaimTemplates, cs.Spec.Selector,
		func(vct string) string { return pvcName(vct, cs.Name, id) },
		map[string]string{appsv1alpha1.CloneSetInstanceID: id}, metav1.NewControllerRef(cs, cloneSetKind))
}
