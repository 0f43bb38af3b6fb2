package controller

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/storage/names"
	daemonutil "k8s.io/kubernetes/pkg/controller/daemon/util"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/daemonset/planner"
	"github.com/lifeline-k8s/lifeline/internal/podexec"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
	"github.com/lifeline-k8s/lifeline/internal/workloadspec"
)

// workload is a set as the shared executor needs it: the object its
// events are about, and how it makes the pod of a node.
type workload struct {
	set       *appsv1beta1.DaemonSet
	templates map[string]*corev1.PodTemplateSpec
	now       time.Time
}

var _ podexec.Workload = workload{}

func (w workload) Object() client.Object { return w.set }

func (w workload) NewPod(a podlife.CreatePod) (*corev1.Pod, []*corev1.PersistentVolumeClaim, error) {
	tmpl := w.templates[a.Revision]
	if tmpl == nil {
		return nil, nil, fmt.Errorf("no template for revision %s", a.Revision)
	}
	return NewPod(w.set, tmpl, a.Revision, a.InstanceID, a.State, w.now), nil, nil
}

// NewPod builds the set's pod for node from a revision's template, as the
// native DaemonSet does: named <set>-<random>, owned by the set, with the
// daemon tolerations, and placed through the scheduler by a node-name
// affinity term in place of the template's required node affinity. It
// carries its revision's short hash (and the template generation, where
// the set has one) and its lifecycle state; the KruisePodReady gate when
// a hook marks pods NotReady, the InPlaceUpdateReady gate when the set
// updates in place.
func NewPod(set *appsv1beta1.DaemonSet, tmpl *corev1.PodTemplateSpec, hash, node string, state pub.LifecycleStateType, now time.Time) *corev1.Pod {
	labels := map[string]string{appsv1.ControllerRevisionHashLabelKey: hash}
	if gen := set.Annotations[planner.TemplateGenerationAnnotation]; gen != "" {
		labels[planner.TemplateGenerationLabel] = gen
	}
	var gates []corev1.PodConditionType
	if podlife.MarksPodNotReady(set.Spec.Lifecycle) {
		gates = append(gates, pub.KruisePodReadyConditionType)
	}
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Type == appsv1beta1.InplaceRollingUpdateType {
		gates = append(gates, pub.InPlaceUpdateReady)
	}
	pod := workloadspec.NewPod{Owner: set, Kind: kind, Name: names.SimpleNameGenerator.GenerateName(set.Name + "-"),
		Labels: labels, State: state, Now: now, Gates: gates}.Build(tmpl)
	daemonutil.AddOrUpdateDaemonPodTolerations(&pod.Spec)
	pod.Spec.Affinity = daemonutil.ReplaceDaemonSetPodNodeNameNodeAffinity(pod.Spec.Affinity, node)
	return pod
}
