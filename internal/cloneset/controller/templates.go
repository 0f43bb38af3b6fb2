package controller

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// templates returns the pod templates of a CloneSet's revisions by name.
// Only live revisions stay cached, so deleted ones do not pile up.
func (r *Reconciler) templates(key types.NamespacedName, revs *revisions) map[string]*corev1.PodTemplateSpec {
	var known map[types.UID]*corev1.PodTemplateSpec
	if v, ok := r.parsed.Load(key); ok {
		known = v.(map[types.UID]*corev1.PodTemplateSpec)
	}
	live := map[types.UID]*corev1.PodTemplateSpec{}
	out := map[string]*corev1.PodTemplateSpec{}
	for _, cr := range append(revs.All, revs.Update) {
		t, ok := known[cr.UID]
		if !ok {
			var err error
			if t, err = templateOf(cr); err != nil {
				continue
			}
		}
		live[cr.UID], out[cr.Name] = t, t
	}
	r.parsed.Store(key, live)
	return out
}
