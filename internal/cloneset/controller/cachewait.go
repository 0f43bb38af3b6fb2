package controller

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
)

// waitForCache says how long to wait before planning while the cache does
// not show this controller's own writes to the CloneSet's pods yet: 0 once
// it does. A write it never shows stops counting after ExpectationTimeout.
func (r *Reconciler) waitForCache(ctx context.Context, cs *appsv1alpha1.CloneSet, all []*corev1.Pod, now time.Time) (time.Duration, error) {
	lookup := func(name string) (types.UID, bool, error) {
		pod := &corev1.Pod{}
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: cs.Namespace, Name: name}, pod)
		if apierrors.IsNotFound(err) {
			return "", false, nil
		}
		return pod.UID, err == nil, err
	}
	ok, waiting, expired, err := r.exec.Expectations.Satisfied(client.ObjectKeyFromObject(cs), all, lookup, now)
	if err != nil {
		return 0, err
	}
	if expired > 0 {
		expectationsExpired.WithLabelValues(cs.Namespace, cs.Name).Add(float64(expired))
		log.FromContext(ctx).Info("dropped expectations the cache never met", "count", expired)
	}
	if !ok {
		// The watch event that meets the expectation requeues us; the
		// delay only bounds a missed one.
		log.FromContext(ctx).V(1).Info("waiting for the cache", "for", waiting)
		return 5 * time.Second, nil
	}
	return 0, nil
}
