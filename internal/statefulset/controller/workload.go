package controller

import (
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/podexec"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
	"github.com/lifeline-k8s/lifeline/internal/revision"
	"github.com/lifeline-k8s/lifeline/internal/statefulset/planner"
	"github.com/lifeline-k8s/lifeline/internal/workloadspec"
)

// The identity labels a set's pods carry, as a StatefulSet's.
const (
	PodNameLabel  = planner.PodNameLabel
	PodIndexLabel = planner.PodIndexLabel
)

// workload is a set as the shared executor needs it: the object its
// events are about, and how it makes the pod (and claims) of an ordinal.
type workload struct {
	set       *appsv1beta1.StatefulSet
	revs      *revision.Revisions
	templates map[string]*corev1.PodTemplateSpec
	now       time.Time
}

var _ podexec.Workload = workload{}

func (w workload) Object() client.Object { return w.set }

func (w workload) NewPod(a podlife.CreatePod) (*corev1.Pod, []*corev1.PersistentVolumeClaim, error) {
	ord, err := strconv.Atoi(a.InstanceID)
	if err != nil {
		return nil, nil, fmt.Errorf("ordinal %q: %w", a.InstanceID, err)
	}
	tmpl := w.templates[a.Revision]
	if tmpl == nil {
		return nil, nil, fmt.Errorf("no template for revision %s", a.Revision)
	}
	return NewPod(w.set, tmpl, a.Revision, ord, a.State, w.now), NewClaims(w.set, ord), nil
}

// NewPod builds the set's pod at ordinal ord from a revision's template:
// named <set>-<ord>, owned by the set, with its identity (hostname,
// subdomain, pod-name and pod-index labels), its revision and lifecycle
// state, and one volume per claim template pointing at the ordinal's
// claim, in place of a template volume of the same name.
func NewPod(set *appsv1beta1.StatefulSet, tmpl *corev1.PodTemplateSpec, rev string, ord int, state pub.LifecycleStateType, now time.Time) *corev1.Pod {
	name := planner.PodName(set.Name, ord)
	var gates []corev1.PodConditionType
	if podlife.MarksPodNotReady(set.Spec.Lifecycle) {
		gates = append(gates, pub.KruisePodReadyConditionType)
	}
	pod := workloadspec.NewPod{Owner: set, Kind: kind, Name: name, State: state, Now: now, Gates: gates, Labels: map[string]string{
		PodNameLabel: name, PodIndexLabel: strconv.Itoa(ord), appsv1.ControllerRevisionHashLabelKey: rev,
	}}.Build(tmpl)
	pod.Spec.Hostname, pod.Spec.Subdomain = name, set.Spec.ServiceName
	pod.Spec.Volumes = workloadspec.ClaimVolumes(pod.Spec.Volumes, set.Spec.VolumeClaimTemplates,
		func(vct string) string { return planner.ClaimName(vct, set.Name, ord) })
	return pod
}

// NewClaims builds the claims of ordinal ord from the claim templates:
// labelled with the template's labels and the selector's matchLabels.
// With whenDeleted: Delete they are owned by the set, so they go with it;
// otherwise nothing owns them and they stay, as a StatefulSet's do.
func NewClaims(set *appsv1beta1.StatefulSet, ord int) []*corev1.PersistentVolumeClaim {
	var owner *metav1.OwnerReference
	if rp := set.Spec.PersistentVolumeClaimRetentionPolicy; rp != nil && rp.WhenDeleted == appsv1beta1.DeletePersistentVolumeClaimRetentionPolicyType {
		owner = &metav1.OwnerReference{APIVersion: kind.GroupVersion().String(), Kind: kind.Kind, Name: set.Name, UID: set.UID}
	}
	return workloadspec.NewClaims(set.Namespace, set.Spec.VolumeClaimTemplates, set.Spec.Selector,
		func(vct string) string { return planner.ClaimName(vct, set.Name, ord) }, nil, owner)
}
