package podexec

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WriteStatus writes a workload's status if it changed (status against
// what field reads from obj), conditional on the version read, and returns
// the workload as stored (obj itself when nothing changed), so that a
// later write in the same reconcile is conditional on this one. With own,
// the write is recorded so that the next reconcile waits for the cache to
// show it.
func WriteStatus[T client.Object, S any](ctx context.Context, c client.Client, own *OwnWrites, obj T, status S, field func(T) *S) (T, error) {
	if apiequality.Semantic.DeepEqual(*field(obj), status) {
		return obj, nil
	}
	updated := obj.DeepCopyObject().(T)
	*field(updated) = status
	if err := c.Status().Update(ctx, updated); err != nil {
		return obj, err
	}
	if own != nil {
		own.Wrote(client.ObjectKeyFromObject(obj), updated.GetResourceVersion())
	}
	return updated, nil
}
