package controller

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
)

// waitForCache waits while the cache does not show this controller's own
// pod writes (podexec's CacheWait).
func (r *Reconciler) waitForCache(ctx context.Context, cs *appsv1alpha1.CloneSet, all []*corev1.Pod, now time.Time) (time.Duration, error) {
	return r.exec.CacheWait(ctx, cs, all, now, expectationsExpired)
}
