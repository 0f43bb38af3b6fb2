package controller

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/podexec"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
)

// workload is a CloneSet as the shared executor (podexec) needs it: the
// object its events are about, and how it makes a pod and its claims at
// one of its revisions.
type workload struct {
	cs   *appsv1alpha1.CloneSet
	revs *revisions
	r    *Reconciler
}

var _ podexec.Workload = workload{}

func (w workload) Object() client.Object { return w.cs }

func (w workload) NewPod(a podlife.CreatePod) (*corev1.Pod, []*corev1.PersistentVolumeClaim, error) {
	cr := w.revs.Update
	if a.Revision == w.revs.Current.Name {
		cr = w.revs.Current
	}
	pod, err := newPod(w.cs, cr, a.InstanceID, a.State, w.r.Clock.Now())
	if err != nil {
		return nil, nil, err
	}
	return pod, newPVCs(w.cs, a.InstanceID), nil
}
