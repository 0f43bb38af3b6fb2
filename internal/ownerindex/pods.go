package ownerindex

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PodLister lists the pods a workload controls. The pods it returns may be
// the cache's own: callers never change them.
type PodLister interface {
	OwnedPods(ctx context.Context, namespace, uid string) ([]*corev1.Pod, error)
}

// ListedPods lists through a client by the field index: what fake clients
// and wrapped caches in tests offer. A cache's List fills a PodList of
// values, a copy of every Pod struct (about 1.1 KB) per call.
type ListedPods struct{ Reader client.Reader }

// OwnedPods implements PodLister.
func (l ListedPods) OwnedPods(ctx context.Context, namespace, uid string) ([]*corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := l.Reader.List(ctx, list, client.InNamespace(namespace), Owned(uid), client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	pods := make([]*corev1.Pod, 0, len(list.Items))
	for i := range list.Items {
		pods = append(pods, &list.Items[i])
	}
	return pods, nil
}

// podIndex is the pod informer's own index by controller UID. UIDs are
// unique across namespaces, so the UID alone is the key.
const podIndex = "lifeline.podsByControllerUID"

// IndexedPods reads the pod informer's index directly: pointers to the
// cached pods, with no list and no copy, as the ReplicaSet controller reads
// its lister. A 10,000-pod CloneSet's reconcile would otherwise allocate
// 11 MB per call (docs/benchmark.md, Memory).
type IndexedPods struct{ indexer toolscache.Indexer }

// NewIndexedPods adds the index to c's pod informer.
func NewIndexedPods(ctx context.Context, c cache.Cache) (*IndexedPods, error) {
	informer, err := c.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return nil, err
	}
	shared, ok := informer.(toolscache.SharedIndexInformer)
	if !ok {
		return nil, fmt.Errorf("the pod informer (%T) offers no indexer", informer)
	}
	if err := informer.AddIndexers(toolscache.Indexers{podIndex: indexByControllerUID}); err != nil {
		return nil, err
	}
	return &IndexedPods{indexer: shared.GetIndexer()}, nil
}

func indexByControllerUID(obj any) ([]string, error) {
	if o, ok := obj.(client.Object); ok {
		return ControllerUID(o), nil
	}
	return nil, nil
}

// OwnedPods implements PodLister. The namespace is checked all the same:
// a controller reference across namespaces is invalid and never adopted.
func (p *IndexedPods) OwnedPods(_ context.Context, namespace, uid string) ([]*corev1.Pod, error) {
	objs, err := p.indexer.ByIndex(podIndex, uid)
	if err != nil {
		return nil, err
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, obj := range objs {
		if pod, ok := obj.(*corev1.Pod); ok && pod.Namespace == namespace {
			pods = append(pods, pod)
		}
	}
	return pods, nil
}

// CachedPod finds a pod by namespace and name: the cache's own, not a copy.
func (p *IndexedPods) CachedPod(namespace, name string) (*corev1.Pod, bool) {
	obj, found, err := p.indexer.GetByKey(namespace + "/" + name)
	if err != nil || !found {
		return nil, false
	}
	pod, ok := obj.(*corev1.Pod)
	return pod, ok
}

// CachedPod finds a pod by namespace and name through the reader. Only a
// pod known gone is reported missing: on any other failed read it reports
// an empty pod, which callers take as present and active.
func (l ListedPods) CachedPod(namespace, name string) (*corev1.Pod, bool) {
	pod := &corev1.Pod{}
	err := l.Reader.Get(context.TODO(), client.ObjectKey{Namespace: namespace, Name: name}, pod)
	return pod, err == nil || !apierrors.IsNotFound(err)
}
