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

var cloneSetKind = appsv1alpha1.GroupVersion.WithKind("CloneSet")

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
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       cs.Namespace,
			Name:            cs.Name + "-" + id,
			GenerateName:    cs.Name + "-",
			Labels:          map[string]string{},
			Annotations:     map[string]string{},
			Finalizers:      tmpl.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cs, cloneSetKind)},
		},
		Spec: tmpl.Spec,
	}
	for k, v := range tmpl.Labels {
		pod.Labels[k] = v
	}
	for k, v := range tmpl.Annotations {
		pod.Annotations[k] = v
	}
	pod.Labels[appsv1alpha1.CloneSetInstanceID] = id
	pod.Labels[appsv1.ControllerRevisionHashLabelKey] = cr.Name
	pod.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = podfacts.ShortHash(cr.Name)
	pod.Labels[pub.LifecycleStateKey] = string(state)
	pod.Annotations[pub.LifecycleTimestampKey] = now.Format(time.RFC3339)
	// A gate the template declares already (as OpenKruise's in-place
	// documentation has users write) is not added twice.
	if planner.UpdatesInPlace(cs) && !podfacts.HasReadinessGate(pod, pub.InPlaceUpdateReady) {
		pod.Spec.ReadinessGates = append(pod.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: pub.InPlaceUpdateReady})
	}
	if planner.MarksPodNotReady(cs) && !podfacts.HasReadinessGate(pod, pub.KruisePodReadyConditionType) {
		pod.Spec.ReadinessGates = append(pod.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: pub.KruisePodReadyConditionType})
	}

	pod.Spec.Volumes = workloadspec.ClaimVolumes(pod.Spec.Volumes, cs.Spec.VolumeClaimTemplates,
		func(vct string) string { return pvcName(vct, cs.Name, id) })
	return pod, nil
}

// newPVCs builds the claims of instance id from the volumeClaimTemplates.
func newPVCs(cs *appsv1alpha1.CloneSet, id string) []*corev1.PersistentVolumeClaim {
	var pvcs []*corev1.PersistentVolumeClaim
	for _, vct := range cs.Spec.VolumeClaimTemplates {
		pvc := vct.DeepCopy()
		pvc.Name = pvcName(vct.Name, cs.Name, id)
		pvc.Namespace = cs.Namespace
		pvc.ResourceVersion, pvc.UID = "", ""
		if pvc.Labels == nil {
			pvc.Labels = map[string]string{}
		}
		if cs.Spec.Selector != nil {
			for k, v := range cs.Spec.Selector.MatchLabels {
				pvc.Labels[k] = v
			}
		}
		pvc.Labels[appsv1alpha1.CloneSetInstanceID] = id
		pvc.OwnerReferences = append(pvc.OwnerReferences, *metav1.NewControllerRef(cs, cloneSetKind))
		pvcs = append(pvcs, pvc)
	}
	return pvcs
}
